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
from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.prove.check import trusted
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import Context, Machine, Policy
from asmevo.prove.registry import execute
from asmevo.prove.z3env import z3

TIMEOUT_MS = 5000


@dataclass
class Window:
    """One proof obligation: ``k0`` and ``cand`` (instruction texts) from one state."""

    k0: list[str]
    cand: list[str]
    live_lanes: int          # live after, in the final EXEC's lanes (vector) or at all (scalar)
    live_all: int            # vector registers live after in every lane
    policy: Policy | None = None
    assume: list = field(default_factory=list)      # callables m_k0, m_cand -> Bool
    extra: list = field(default_factory=list)       # callables -> [(name, k0 term, cand term)]


@dataclass
class Result:
    status: str                          # proved | refuted | unknown
    reason: str = ""
    seconds: float = 0.0
    obligations: int = 0                 # compared terms the solver had to decide
    counterexample: dict | None = None

    def to_json(self) -> dict:
        out = {"status": self.status, "reason": self.reason,
               "seconds": round(self.seconds, 3), "obligations": self.obligations}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out


def _vreg(bit: int, accum: int) -> int:
    return bit - R.VGPR_BASE if bit < R.AGPR_BASE else accum + bit - R.AGPR_BASE


def _bits(mask: int, lo: int, hi: int):
    m = (mask >> lo) & ((1 << (hi - lo)) - 1)
    while m:
        low = m & -m
        yield lo + low.bit_length() - 1
        m ^= low


def differences(a: Machine, b: Machine, w: Window) -> list[tuple[str, object]]:
    """(what, Bool that holds where K0 and the candidate differ there) for everything
    that is not the same term on both sides."""
    ctx = a.ctx
    out = []

    def cmp(name, x, y, guard=None):
        if x.eq(y):
            return
        d = z3.Xor(x, y) if x.sort().kind() == z3.Z3_BOOL_SORT else x != y
        out.append((name, d if guard is None else z3.And(guard, d)))

    live = w.live_lanes | w.live_all
    for r in _bits(live, 0, 128):
        cmp(R.names(1 << r)[0], a.sget(r), b.sget(r))
    if live & R.SCC_MASK:
        cmp("scc", a.scc, b.scc)
    on = a.active()
    for bit in _bits(live, R.VGPR_BASE, R.NBITS):
        r = _vreg(bit, ctx.accum_offset)
        if r in a.v or r in b.v or a.policy is not None:
            cmp(f"v{r}", a.vget(r), b.vget(r), None if (w.live_all >> bit) & 1 else on)
    cmp("memory", a.mem, b.mem)
    cmp("LDS", a.lds, b.lds)
    if len(a.barriers) != len(b.barriers):
        out.append(("barriers", z3.BoolVal(True)))
    for i, ((ma, la), (mb, lb)) in enumerate(zip(a.barriers, b.barriers)):
        cmp(f"memory at barrier {i}", ma, mb)
        cmp(f"LDS at barrier {i}", la, lb)
    fa, fb = _fault(a), _fault(b)
    cmp("fault", fa, fb)
    for extra in w.extra:
        for name, x, y in extra(a, b):
            cmp(name, x, y)
    return out


def _fault(m: Machine):
    conds = [m.faults[k] for k in sorted(m.faults)]
    return z3.Or(*conds) if conds else z3.BoolVal(False)


def run_window(ctx: Context, texts: list[str], side: str, policy: Policy | None) -> Machine:
    m = Machine(ctx, side, policy)
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
        b = run_window(ctx, w.cand, "cand", w.policy)
    except Unsupported as exc:
        return Result("unknown", f"instruction not modeled: {exc}", time.perf_counter() - t0)
    diffs = differences(a, b, w)
    assume = [f(a, b) for f in w.assume]
    if not diffs:
        return Result("proved", "the same terms", time.perf_counter() - t0)
    s = solver(ctx, [d for _, d in diffs] + assume, timeout_ms)
    s.add(*assume)
    s.add(z3.Or(*[d for _, d in diffs]))
    got = s.check()
    dt = time.perf_counter() - t0
    if got == z3.unsat:
        return Result("proved", "the solver found no difference", dt, len(diffs))
    if got != z3.sat:
        return Result("unknown", f"solver: {s.reason_unknown()}", dt, len(diffs))
    which = [name for name, d in diffs if z3.is_true(s.model().eval(d, model_completion=True))]
    if not replay or w.policy is not None:
        return Result("unknown", f"differs in {', '.join(which[:4])} for some entry state",
                      dt, len(diffs))
    from asmevo.prove.replay import refute
    return refute(ctx, w, a, b, diffs, assume, t0, timeout_ms)

