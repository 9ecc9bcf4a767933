"""``mfma_schedule``: list scheduling of an MFMA block with the matrix pipe as a resource.

``schedule`` ranks by latency-weighted critical path and issues every vector op
4 cycles after the last, so it packs dependent-free MFMAs back to back and pushes the
VALU, LDS and memory work behind them. The matrix pipe does not work that way: an
MFMA occupies it for its passes (4 cycles each; ``v_mfma_f32_32x32x8_bf16`` 16 passes)
while the wave keeps issuing one instruction per 4-cycle slot to the other pipes, and
a dependent MFMA (same accumulator) waits for the result 2 cycles after the pipe frees.
This scheduler simulates exactly that machine: one issue per slot, the MFMA pipe busy
for each MFMA's passes, the VALU pipe for 4 cycles (16 for transcendental and
quarter-rate ops), results ready after their latency (MFMA: passes + 2; LDS 64; SMEM
64; VMEM 500); it picks, each slot, the ready instruction with the longest
latency-weighted path to the end of the region whose pipe is free, so loads and LDS
reads go out early and VALU/SALU work fills the slots an MFMA leaves.

Preserves what ``schedule`` preserves (the same dependency DAG, fixed points and
pinned waits in place, waits recomputed from the block's entry state to no more than
its exit state, hazards re-padded); only the order of the instructions between fixed
points changes. Proposes only for blocks with at least :data:`MIN_MFMA` MFMAs.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import dependency_dag
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
from asmevo.operators.rules.common import (candidate_windows, is_nop, is_wait, pinned_waits, positive,
                                    regions, seal)

MIN_MFMA = 4
SLOT = 4
BAND = 32              # cycles of critical path within which the program order decides
LATENCY = {"VMEM": 500, "SMEM": 64, "LDS": 64, "VALU_TRANS": 20}
QUARTER = ("v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mad_u64_u32", "v_mad_i64_i32")


def _costs(e, family: str) -> tuple[str, int, int]:
    """(pipe, cycles the pipe is busy, cycles until the result may be read)."""
    if e.mfma:
        busy = max(1, e.passes(family)) * 4
        return "mfma", busy, busy + 2
    if e.klass in ("VALU", "VALU_TRANS", "DOT"):
        slow = e.klass == "VALU_TRANS" or e.mnemonic.startswith(QUARTER)
        return "valu", 16 if slow else 4, 20 if slow else SLOT
    return e.klass, 0, LATENCY.get(e.klass, SLOT)


def pipe_schedule(texts: list[str], rng, family: str) -> list[int]:
    """An order of ``texts`` (no waits, NOPs or fixed points) respecting their DAG, by
    simulated issue on one SIMD (module doc)."""
    n = len(texts)
    if n < 2:
        return list(range(n))
    dag = dependency_dag(texts)
    costs = [_costs(effects(t), family) for t in texts]
    raw = {(e.src, e.dst) for e in dag.edges if e.kind == "raw"}

    def edge(a: int, b: int) -> int:
        return costs[a][2] if (a, b) in raw else 1

    prio = [0.0] * n
    for k in range(n - 1, -1, -1):
        prio[k] = max([float(costs[k][2] + costs[k][1])] +
                      [edge(k, s) + prio[s] for s in dag.succs[k]])
    # near-equal paths keep the program's order (its consumers' order: an LDS read
    # issued before the MFMA that needs it first lets a finer wait release that MFMA),
    # perturbed by the rng within a band
    band = [int(p // BAND) for p in prio]
    tie = [-k + rng.random() * 0.5 for k in range(n)]
    waiting = [len(dag.preds[k]) for k in range(n)]
    earliest = [0] * n
    free = {"mfma": 0, "valu": 0}
    t = 0
    order: list[int] = []
    avail = {k for k in range(n) if waiting[k] == 0}
    while avail:
        def start(k: int) -> int:
            return max(earliest[k], free.get(costs[k][0], 0))
        ready = [k for k in avail if start(k) <= t]
        if not ready:
            t = max(t + SLOT, min(start(k) for k in avail))
            t = -(-t // SLOT) * SLOT
            continue
        pick = max(sorted(ready), key=lambda k: (band[k], tie[k]))
        avail.discard(pick)
        order.append(pick)
        pipe, busy, _ = costs[pick]
        if pipe in free:
            free[pipe] = t + busy
        for s in sorted(dag.succs[pick]):
            earliest[s] = max(earliest[s], t + edge(pick, s))
            waiting[s] -= 1
            if waiting[s] == 0:
                avail.add(s)
        t += SLOT
    assert len(order) == n and dag.respects(order)
    return order


def reschedule_mfma(texts: list[str], rng, family: str) -> list[str]:
    pinned = pinned_waits(texts)
    kept = [t for k, t in enumerate(texts)
            if not is_nop(t) and not (is_wait(t) and k not in pinned)]
    out = list(kept)
    for a, b in regions(kept):
        order = pipe_schedule(kept[a:b], rng, family)
        out[a:b] = [kept[a + k] for k in order]
    return out


@mutation("mfma_schedule", targets=("amdgpu",))
class MfmaSchedule:
    """Schedule one hot MFMA block against the matrix pipe's occupancy (module doc)."""

    def __init__(self, tries: int = 4, top_windows: int = 8):
        self.tries, self.top_windows = positive(tries=tries, top_windows=top_windows)

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        family, _ = target_family(program.source.target)
        reasons: list[str] = []
        for name, a, b in candidate_windows(context, individual, top=self.top_windows,
                                            min_len=MIN_MFMA):
            texts = [i.text for i in fn.instructions[a:b]]
            if sum(effects(t).mfma for t in texts) < MIN_MFMA:
                continue
            new = reschedule_mfma(texts, context.rng, family)
            if [t for t in new if not is_wait(t)] == [t for t in texts
                                                      if not is_wait(t) and not is_nop(t)]:
                reasons.append(f"[{a}:{b}] already in this order")
                continue
            entry, exit_ = window_states(fn, a, b)
            lines = recompute_waitcnts(new, entry, exit_, keep=True)
            result = seal(program, name, a, b, lines, operator=self.name,
                          note=f"pipe-aware schedule of MFMA block [{a}:{b}]")
            if isinstance(result, Edit):
                return result
            reasons.append(f"[{a}:{b}] {result}")
            if len(reasons) >= self.tries:
                break
        return context.reject("; ".join(reasons[:3]) or
                              f"no hot block holds {MIN_MFMA} MFMAs")
