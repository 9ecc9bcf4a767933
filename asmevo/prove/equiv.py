"""Window equivalence: two straight-line instruction sequences, one symbolic state.

K0's window and the candidate's run on two :class:`~asmevo.prove.machine.Machine` s of
one :class:`~asmevo.prove.machine.Context` (the same initial registers, EXEC, SCC,
M0, memory and LDS). They are equivalent when, for every initial state and every
lane, they agree on what is live after the window (K0's lane-aware liveness: a
register live only in EXEC's lanes is compared where K0's final EXEC has the lane
on, one possibly live in other lanes everywhere), on global memory and LDS (the
arrays after every store, and at every barrier), and on the conditions under which
they fault. Waits and hazards are the static gate's (``s_waitcnt`` is a no-op here).

The question goes to z3 only where the two results are not the same term. The
answer is ``proved`` (unsat), ``refuted`` (a model, turned into a concrete wave state
and replayed on the emulator, where K0's and the candidate's windows differ on a
live value, memory or the fault status) or ``unknown`` (an instruction without
checked semantics, a time limit, a model the emulator does not reproduce).
"""
from __future__ import annotations

import time

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.prove.check import trusted
from asmevo.prove.errors import OutOfTime, Unsupported
from asmevo.prove.machine import Context, Machine, Policy
from asmevo.prove.obligation import Result, Window, bits, fault, vreg
from asmevo.prove.registry import execute
from asmevo.prove.replay import refute
from asmevo.prove.z3env import check, over_memory, unknown_reason, z3

TIMEOUT_MS = 5000


def differences(a: Machine, b: Machine, w: Window) -> list[tuple[str, object]]:
    """(what, Bool that holds where K0 and the candidate differ there) for everything
    that is not the same term on both sides."""
    ctx = a.ctx
    out = []

    def cmp(name, x, y, guard=None):
        if x.eq(y):
            return
        kind = x.sort().kind()
        if kind == z3.Z3_ARRAY_SORT:    # at one dword (a witness of the difference):
            at = z3.Const(f"{name}!at", x.domain())      # no extensionality to reason
            d = z3.Select(x, at) != z3.Select(y, at)     # about, and the model names it
        else:
            d = z3.Xor(x, y) if kind == z3.Z3_BOOL_SORT else x != y
        out.append((name, d if guard is None else z3.And(guard, d)))

    live = w.live_lanes | w.live_all
    for r in bits(live, 0, 128):
        cmp(R.names(1 << r)[0], a.sget(r), b.sget(r))
    if live & R.SCC_MASK:
        cmp("scc", a.scc, b.scc)
    on = a.active()
    # where the lane is on, EXEC is not empty (v_readfirstlane's "no lane" case is moot)
    nonempty = [(ctx.exec_empty(m.exec64()), z3.BoolVal(False)) for m in (a, b)]
    for bit in bits(live, R.VGPR_BASE, R.NBITS):
        r = vreg(bit, ctx.accum_offset)
        if r in a.v or r in b.v or a.policy is not None:
            if (w.live_all >> bit) & 1:
                cmp(f"v{r}", a.vget(r), b.vget(r))
            else:
                cmp(f"v{r}", z3.substitute(a.vget(r), *nonempty),
                    z3.substitute(b.vget(r), *nonempty), on)
    cmp("memory", a.mem, b.mem)
    cmp("LDS", a.lds, b.lds)
    if len(a.barriers) != len(b.barriers):
        out.append(("barriers", z3.BoolVal(True)))
    for i, ((ma, la), (mb, lb)) in enumerate(zip(a.barriers, b.barriers)):
        cmp(f"memory at barrier {i}", ma, mb)
        cmp(f"LDS at barrier {i}", la, lb)
    cmp("fault", fault(a), fault(b))
    for extra in w.extra:
        for name, x, y in extra(a, b):
            cmp(name, x, y)
    return out


def run_window(ctx: Context, texts: list[str], side: str, policy: Policy | None,
               ref: Machine | None = None) -> Machine:
    """``texts`` on a fresh machine (``ref``: K0's, whose address terms it reuses)."""
    m = Machine(ctx, side, policy)
    m.ref = ref
    for t in texts:
        execute(m, t)
    return m


# modeled, not checked: the emulator's scheduler runs a barrier across waves, which one
# wave's harness cannot; the model (machine.Machine.barrier) is the conservative one
NOT_CHECKED = ("s_barrier",)


def unchecked(ctx: Context, texts) -> str | None:
    """Why one of ``texts`` may not be used in a proof (its semantics failed, or were
    never, checked against the emulator), or None."""
    for t in dict.fromkeys(texts):
        if t.split()[0] in NOT_CHECKED:
            continue
        got = trusted(t, ctx.mode, ctx.processor)
        if got.refused:
            return f"{t!r}: {got.refused}"
        if got.disagreements:
            return f"{t!r}: semantics disagree with the emulator ({got.disagreements[0]})"
        if got.cases <= got.skipped:
            return f"{t!r}: the emulator refused every checked state"
    return None


def solver(ctx: Context, terms: list, timeout_ms: int):
    """A solver that knows what every placeholder in ``terms`` stands for."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*ctx.facts())
    for ph, rhs in ctx.definitions(terms):
        s.add(ph == rhs)
    return s


def prove_window(ctx: Context, w: Window, *, timeout_ms: int = TIMEOUT_MS,
                 replay: bool = True) -> Result:
    """Decide ``w`` (see the module doc)."""
    t0 = time.perf_counter()
    why = unchecked(ctx, w.k0 + w.cand)
    if why:
        return Result("unknown", f"instruction not modeled: {why}", time.perf_counter() - t0)
    try:
        a = run_window(ctx, w.k0, "k0", w.policy)
        b = run_window(ctx, w.cand, "cand", w.policy, a)
    except Unsupported as exc:
        return Result("unknown", f"instruction not modeled: {exc}", time.perf_counter() - t0)
    except OutOfTime as exc:
        return Result("unknown", str(exc), time.perf_counter() - t0)
    diffs = differences(a, b, w)
    assume = [f(a, b) for f in w.assume]
    if not diffs:
        return Result("proved", "the same terms", time.perf_counter() - t0, final=(a, b))
    s = solver(ctx, [d for _, d in diffs] + assume, timeout_ms)
    s.add(*assume)
    s.add(z3.Or(*[d for _, d in diffs]))
    got = check(s)
    if got not in (z3.sat, z3.unsat) and len(diffs) > 1 and not over_memory(s):
        s, got = one_by_one(ctx, diffs, assume, timeout_ms) or (s, got)
    dt = time.perf_counter() - t0
    if got == z3.unsat:
        return Result("proved", "the solver found no difference", dt, len(diffs), final=(a, b))
    if got != z3.sat:
        return Result("unknown", f"solver: {unknown_reason(s)}", dt, len(diffs))
    which = [name for name, d in diffs if z3.is_true(s.model().eval(d, model_completion=True))]
    if not replay or w.policy is not None:
        return Result("unknown", f"differs in {', '.join(which[:4])} for some entry state",
                      dt, len(diffs))
    return refute(ctx, w, a, b, diffs, assume, t0, timeout_ms, first=which)


ONE_BY_ONE = 8          # differences asked alone at most, where their disjunction timed out
WHOLE = ("memory", "LDS", "fault", "barriers")


def one_by_one(ctx: Context, diffs, assume, timeout_ms: int):
    """(a solver, its answer) after asking the differences one at a time, registers
    before memory, LDS and faults: the first ``sat`` (a model of one is a model of
    their disjunction), or ``unsat`` where every one was asked and is; None where
    neither (one undecided, or the proof's budget spent). Where the disjunction ran out
    of time, a register's difference alone is often instant (one lane's value), while a
    64-lane store weighs on the whole."""
    order = sorted(diffs, key=lambda nd: nd[0].startswith(WHOLE))
    for _, d in order[:ONE_BY_ONE]:
        if ctx.deadline is not None and time.perf_counter() > ctx.deadline:
            return None         # the proof's budget is spent: what was undecided stays so
        s = solver(ctx, [d] + assume, timeout_ms)
        s.add(*assume)
        s.add(d)
        got = check(s)
        if got == z3.sat:
            return s, got
        if got != z3.unsat:
            return None
    return (s, z3.unsat) if len(order) <= ONE_BY_ONE else None

