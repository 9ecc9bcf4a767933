"""``schedule``: latency-aware list scheduling of one basic block.

Preserves: every register and memory dependence of the block (the analysis
layer's dependency DAG: RAW/WAR/WAW on every register including SCC, VCC and
EXEC, and store order unless a uniform address proves disjointness), and every
fixed point in place -- barriers, branches, program end, EXEC writers,
``s_setprio``/``s_sleep``, messages, cache fences, clock and hardware-register
reads, unknown instructions -- together with the waits directly before a
barrier or fence. Only the instructions between two fixed points move, and
each still executes exactly once under the same EXEC. Waits are then
recomputed from the block's entry state to no more than its exit state, and
hazards padded with the fewest ``s_nop``.

Why it can be faster: a critical-path list scheduler issues long-latency
producers (VMEM ~500 cycles, SMEM/LDS ~64, MFMA 4 per pass) as early as their
inputs allow and fills the wait with independent ALU work, so the recomputed
``s_waitcnt`` lands later and stalls less; clustered loads overlap their
latencies. Ties (and, with ``noise``, near-ties) are broken by the context's
rng, so each call may propose a different valid schedule.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.targets.amdgpu.analysis.liveness import dependency_dag
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import (candidate_windows, is_fixed_point, is_nop, is_wait,
                                    pinned_waits, regions, seal)

LATENCY = {"VMEM": 500, "SMEM": 64, "LDS": 64, "VALU_TRANS": 16, "VALU": 4, "DOT": 4,
           "SALU": 2}
ISSUE = {"SALU": 1, "SMEM": 1}      # cycles before the next issue; vector ops: 4


def latency(e: Effects, family: str) -> int:
    """Cycles until a consumer of ``e``'s result may issue (the priority weight)."""
    if e.mfma:
        return max(1, e.passes(family)) * 4
    return LATENCY.get(e.klass, 1)


def schedule_region(texts: list[str], rng, family: str, noise: float = 0.0) -> list[int]:
    """An order of ``texts`` (a stretch without waits, NOPs or fixed points) that
    respects their dependency DAG: cycle-driven list scheduling by
    latency-weighted critical path, rng tie-breaks, ``noise`` relative jitter."""
    n = len(texts)
    if n < 2:
        return list(range(n))
    dag = dependency_dag(texts)
    effs = [effects(t) for t in texts]
    lat = [latency(e, family) for e in effs]
    raw = {(e.src, e.dst) for e in dag.edges if e.kind == "raw"}

    def edge(a: int, b: int) -> int:
        return lat[a] if (a, b) in raw else 1

    prio = [0.0] * n
    for k in range(n - 1, -1, -1):
        prio[k] = max([float(lat[k])] + [edge(k, s) + prio[s] for s in dag.succs[k]])
    if noise > 0:
        prio = [p * (1.0 + noise * rng.random()) for p in prio]
    tie = [rng.random() for _ in range(n)]
    waiting = [len(dag.preds[k]) for k in range(n)]
    earliest = [0] * n
    cycle = 0
    order: list[int] = []
    avail = {k for k in range(n) if waiting[k] == 0}
    while avail:
        ready = [k for k in avail if earliest[k] <= cycle]
        if not ready:
            cycle = min(earliest[k] for k in avail)
            continue
        pick = max(sorted(ready), key=lambda k: (prio[k], tie[k]))
        avail.discard(pick)
        order.append(pick)
        for s in sorted(dag.succs[pick]):
            earliest[s] = max(earliest[s], cycle + edge(pick, s))
            waiting[s] -= 1
            if waiting[s] == 0:
                avail.add(s)
        cycle += ISSUE.get(effs[pick].klass, 4)
    assert len(order) == n and dag.respects(order)
    return order


def reschedule(texts: list[str], rng, family: str, noise: float = 0.0) -> list[str]:
    """The window's instructions rescheduled region by region: unpinned waits and
    every ``s_nop`` dropped (recomputed / re-padded later), fixed points and
    pinned waits kept in place."""
    pinned = pinned_waits(texts)
    kept = [t for k, t in enumerate(texts)
            if not is_nop(t) and not (is_wait(t) and k not in pinned)]
    out = list(kept)
    for a, b in regions(kept):
        order = schedule_region(kept[a:b], rng, family, noise)
        out[a:b] = [kept[a + k] for k in order]
    return out


def _movable(texts: list[str]) -> list[str]:
    return [t for t in texts if not is_nop(t) and not is_wait(t) and not is_fixed_point(t)]


@mutation("schedule", targets=("amdgpu",))
class Schedule:
    """Latency-aware list scheduling of one hot basic block (see the module doc)."""

    def __init__(self, tries: int = 6, top_windows: int = 8, noise: float = 0.15):
        if tries < 1 or top_windows < 1 or noise < 0:
            raise ValueError("tries and top_windows must be >= 1, noise >= 0")
        self.tries = tries
        self.top_windows = top_windows
        self.noise = noise

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        family, _ = target_family(program.source.target)
        windows = candidate_windows(context, individual, top=self.top_windows, min_len=3)
        reasons: list[str] = []
        for name, a, b in windows[:self.tries]:
            texts = [i.text for i in fn.instructions[a:b]]
            new = reschedule(texts, context.rng, family, self.noise)
            if _movable(new) == _movable(texts):
                reasons.append(f"[{a}:{b}] already in a scheduled order")
                continue
            entry, exit_ = window_states(fn, a, b)
            lines = recompute_waitcnts(new, entry, exit_, keep=True)
            moved = sum(x != y for x, y in zip(_movable(new), _movable(texts)))
            result = seal(program, name, a, b, lines, operator=self.name,
                          note=f"list-schedule block [{a}:{b}] ({moved} moved)")
            if isinstance(result, Edit):
                return result
            reasons.append(f"[{a}:{b}] {result}")
        if not reasons:
            return context.reject("no block of at least 3 reachable instructions")
        return context.reject("; ".join(reasons[:3]))
