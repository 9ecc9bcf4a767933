"""Loop rewrites: the ``unroll`` operator's loops, proved by their obligations.

K0's single-block loop ``L: B; br L`` (``br`` a conditional branch) becomes (see
:mod:`asmevo.operators.rules.unroll`)::

    L:  G; br' R        guard: branch to the remainder unless the next F-1 tests continue
        P; br L         F copies of B, renamed and rescheduled; the last copy's test
        s_branch X
    R:  B'; br R        K0's loop again (the remainder)
    X:

The candidate is equivalent to K0 for every trip count by a simulation over its
loop's trips: each trip from ``L`` either runs K0's own loop from the state it had
(guard taken), or runs exactly F of K0's iterations (guard not taken) and then
branches back to ``L`` exactly when K0 would go on. The obligations, each a
straight-line proof from any state that agrees with K0's on what K0 has live at
``L`` (the candidate's other registers hold whatever earlier trips left there):

1. the guard changes nothing K0 has live at ``L`` and cannot fault;
2. where the guard does not branch, K0's first F-1 exit tests continue (the guard is
   sufficient: F iterations really run), and P gives what B run F times gives on
   everything live at the end of K0's loop block, memory and faults included, with
   the same final exit test;
3. the remainder ``B'`` is K0's loop body (the same text, or proved equivalent to it
   as a straight-line region).

That covers every trip count, including the remainders of every residue modulo F,
without a bound on it: the induction is over the candidate's trips. Loops the
``pipeline`` operator rewrote (a prologue and epilogue around a steady state that
runs one group's loads ahead) are not modeled: ``unknown``.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from asmevo.edits import GENERATED_LABEL
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness
from asmevo.targets.amdgpu.program import Instruction, Label
from asmevo.prove.equiv import differences, prove_window, run_window, solver, unchecked
from asmevo.prove.obligation import Result, Window
from asmevo.prove.errors import OutOfTime, Unsupported
from asmevo.prove.machine import EXEC, VCC, Machine
from asmevo.prove.registry import execute
from asmevo.prove.regions import NotStraight, diff_regions, policy_of
from asmevo.prove.z3env import check, unknown_reason, z3

_COND = re.compile(r"s_cbranch_(scc0|scc1|vccz|vccnz|execz|execnz)$")


@dataclass
class Unrolled:
    label: str            # L
    body: list[str]       # K0's B
    branch: str           # K0's br mnemonic
    guard: list[str]      # G (without its branch)
    guard_branch: str     # br'
    group: list[str]      # P
    remainder: list[str]  # B'
    block: int            # K0's loop block index
    items: tuple[int, int]   # the candidate's items the structure spans (L's label to X's)


def taken(m: Machine, mnemonic: str):
    """Whether conditional branch ``mnemonic`` is taken in state ``m``."""
    kind = _COND.match(mnemonic).group(1)
    if kind.startswith("scc"):
        return m.scc if kind == "scc1" else z3.Not(m.scc)
    val = m.sget64(VCC if kind.startswith("vcc") else EXEC)
    return val == 0 if kind.endswith("z") and not kind.endswith("nz") else val != 0


def k0_loops(fa) -> list[tuple[int, str, list[str], str]]:
    """K0's single-block loops: (block index, label, body texts, branch mnemonic)."""
    out = []
    for bi, b in enumerate(fa.blocks()):
        if b.label is None or b.end <= b.start:
            continue
        last = fa.instructions[b.end - 1]
        if _COND.match(last.mnemonic) and last.branch_target == b.label:
            out.append((bi, b.label, [i.text for i in fa.instructions[b.start:b.end - 1]],
                        last.mnemonic))
    return out


def _run_of(items, k: int) -> tuple[list[str], int]:
    """The texts of the instructions from item ``k`` to the next label, and its index."""
    out = []
    while k < len(items) and isinstance(items[k], Instruction):
        out.append(items[k].text)
        k += 1
    return out, k


def _match(fb, loop) -> Unrolled | None:
    bi, label, body, br = loop
    items = fb.items
    at = next((k for k, it in enumerate(items) if isinstance(it, Label) and it.name == label),
              None)
    if at is None:
        return None
    seq, k = _run_of(items, at + 1)
    # L: G; br' R; P; br L; s_branch X   then   R: B'; br R   then   X:
    gb = next((i for i, t in enumerate(seq) if _COND.match(t.split()[0]) and
               GENERATED_LABEL.match(t.split()[-1])), None)
    if gb is None or len(seq) < gb + 3 or seq[-2] != f"{br} {label}" or \
            not seq[-1].startswith("s_branch "):
        return None
    rem, done = seq[gb].split()[-1], seq[-1].split()[-1]
    if k + 1 >= len(items) or not isinstance(items[k], Label) or items[k].name != rem:
        return None
    tail, j = _run_of(items, k + 1)
    if not tail or tail[-1] != f"{br} {rem}" or j >= len(items) or \
            not isinstance(items[j], Label) or items[j].name != done:
        return None
    return Unrolled(label, body, br, seq[:gb], seq[gb].split()[0], seq[gb + 1:-2], tail[:-1],
                    bi, (at, j + 1))


def _fold(fb, u: Unrolled):
    """``fb`` with the unrolled structure back in K0's shape (L: B'; br L), so the rest
    of the function can be compared with K0 as straight-line regions."""
    lo, hi = u.items
    new = [fb.items[lo]] + [Instruction(t) for t in u.remainder] + \
        [Instruction(f"{u.branch} {u.label}")]
    return replace(fb, items=tuple(fb.items[:lo]) + tuple(new) + tuple(fb.items[hi:]))


_STEP = re.compile(r"s_add_[iu]32 (s\d+), \1, (-?(?:0x[0-9a-f]+|\d+))$")


def factors(u: Unrolled) -> list[int]:
    """The unroll factors to try, likeliest first: the ratio of the group's counter step
    to the body's (the copies' steps are folded into one), else of their sizes."""
    def step(texts):
        for t in texts:
            mt = _STEP.match(t)
            if mt:
                v = int(mt.group(2), 0)
                return mt.group(1), v - (1 << 32) if v >= 1 << 31 else v
        return None
    a, b = step(u.body), step(u.group)
    if a and b and a[0] == b[0] and a[1] and b[1] % a[1] == 0 and b[1] // a[1] in (2, 4, 8):
        return [b[1] // a[1]]           # the counter says it: no other factor to try

    def size(ts):
        return sum(1 for t in ts if not t.startswith(("s_nop", "s_waitcnt")))
    ratio = size(u.group) / max(1, size(u.body))
    first = min((2, 4, 8), key=lambda f: abs(f - ratio) / f)
    return [first] + [f for f in (2, 4, 8) if f != first]


def prove_unrolled(ctx, fa, u: Unrolled, *, timeout_ms: int) -> list[tuple[dict, Result]]:
    """The obligations 1 and 2 of the module doc."""
    lane = LaneLiveness(fa)
    blk = fa.blocks()[u.block]
    live_in = lane.split_before(blk.start)
    out_l, out_p = lane.out_L[lane.cfg.block_of[blk.start]], \
        lane.out_P[lane.cfg.block_of[blk.start]]
    policy = policy_of(live_in, ctx.accum_offset, u.body + u.guard + u.group, out_p)
    rows = []
    guard = prove_window(ctx, Window([], u.guard, *live_in, policy=policy),
                         timeout_ms=timeout_ms, replay=False)
    rows.append(({"loop": u.label, "obligation": "guard keeps K0's state"}, guard))
    tried = []
    for f in factors(u):
        got = _group(ctx, u, f, (out_l, out_p), policy, timeout_ms)
        tried.append((f, got))
        if got.status == "proved":
            break
    f, got = next(((f, r) for f, r in tried if r.status == "proved"), tried[0])
    rows.append(({"loop": u.label, "obligation": f"{f} iterations as one trip",
                  "factor": f}, got))
    return rows


def _group(ctx, u: Unrolled, f: int, live, policy, timeout_ms: int) -> Result:
    t0 = time.perf_counter()
    why = unchecked(ctx, u.body + u.guard + u.group)
    if why:
        return Result("unknown", f"instruction not modeled: {why}", time.perf_counter() - t0)
    try:
        a = Machine(ctx, "k0", policy)
        tests = []
        for _ in range(f):
            for t in u.body:
                execute(a, t)
            tests.append(taken(a, u.branch))
        b = run_window(ctx, u.guard, "cand", policy, a)
        goes_on = z3.Not(taken(b, u.guard_branch))
        for t in u.group:
            execute(b, t)
    except Unsupported as exc:
        return Result("unknown", f"instruction not modeled: {exc}", time.perf_counter() - t0)
    except OutOfTime as exc:
        return Result("unknown", str(exc), time.perf_counter() - t0)
    w = Window(u.body * f, u.group, *live)
    diffs = differences(a, b, w)
    for k, test in enumerate(tests[:-1]):
        diffs.append((f"exit test {k + 1} of {f} continues", z3.Not(test)))
    last = taken(b, u.branch)
    if not tests[-1].eq(last):
        diffs.append(("the last exit test", z3.Xor(tests[-1], last)))
    if not diffs:
        return Result("proved", "the same terms", time.perf_counter() - t0)
    s = solver(ctx, [d for _, d in diffs] + [goes_on], timeout_ms)
    s.add(goes_on, z3.Or(*[d for _, d in diffs]))
    got = check(s)
    dt = time.perf_counter() - t0
    if got == z3.unsat:
        return Result("proved", "the solver found no difference", dt, len(diffs))
    if got == z3.sat:
        model = s.model()
        which = [n for n, d in diffs if z3.is_true(model.eval(d, model_completion=True))]
        return Result("unknown", f"differs in {', '.join(which[:4])} for some entry state",
                      dt, len(diffs))
    return Result("unknown", f"solver: {unknown_reason(s)}", dt, len(diffs))


def prove_loops(ctx, fa, fb, *, timeout_ms: int = 5000):
    """(the candidate's function with each rewritten loop folded back into K0's shape,
    its straight-line regions against K0, the loops' obligations), or NotStraight where
    a structural difference is not an unrolled loop. The regions' candidate indices are
    the folded function's: their texts must be read from it."""
    rows = []
    folded = fb
    for loop in k0_loops(fa):
        u = _match(folded, loop)
        if u is None:
            continue
        rows += prove_unrolled(ctx, fa, u, timeout_ms=timeout_ms)
        folded = _fold(folded, u)
    if not rows:
        raise NotStraight("not an unrolled loop (the pipeline operator's loops are not "
                          "modeled)")
    return folded, diff_regions(fa, folded), rows
