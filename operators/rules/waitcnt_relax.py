"""``waitcnt_relax``: the weakest sufficient ``s_waitcnt`` in one basic block.

Two modes, tried in an rng-chosen order until one changes something:

- ``relax``: every wait stays where it is but asks only for what the uses
  before the next wait need (``vmcnt(0)`` before the first of two loaded
  values becomes ``vmcnt(1)``), or goes away (the analysis layer's
  ``relax_waitcnts``).
- ``sink``: the unpinned waits are dropped and recomputed just before the
  first instruction that needs each value (``recompute_waitcnts``), so
  independent work between a load and its use runs while the load is in
  flight.

Preserves: the instruction order and every value read after a memory op
(each read still waits for its producer under GFX9's in-order vmcnt and LDS
queues; SMEM and FLAT still drain with ``lgkmcnt(0)``); the block leaves no
more outstanding than the original did, so later waits stay sufficient; waits
directly before a barrier or cache fence (the memory-model half of a release)
are kept verbatim. Hazard wait states are re-padded.

Why it can be faster: a wave stalls at a wait until its counter drops; a
weaker or later wait lets it keep issuing while memory is still in flight.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.waitcnt import (recompute_waitcnts, relax_waitcnts,
                                                    window_states)
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import (candidate_windows, is_wait, option_subset, pinned_waits,
                                    positive, seal)

MODES = ("relax", "sink")


def restore_pinned(old: list[str], new: list[str]) -> list[str]:
    """``new`` (``old`` with its waits changed in place) with the pinned waits of
    ``old`` put back verbatim before the same instruction. Stronger waits than
    needed never break sufficiency: fewer outstanding ops keep every age."""
    pinned = pinned_waits(old)
    before: dict[int, list[str]] = {}
    run: list[str] = []
    ordinal = 0
    for k, t in enumerate(old):
        if is_wait(t):
            if k in pinned:
                run.append(t)
            continue
        if run:
            before[ordinal] = run
            run = []
        ordinal += 1
    out: list[str] = []
    run = []
    ordinal = 0
    for t in new:
        if is_wait(t):
            run.append(t)
            continue
        out += before.get(ordinal, run)
        run = []
        out.append(t)
        ordinal += 1
    return out + run


def relaxed(texts: list[str], entry, exit_) -> list[str]:
    return restore_pinned(texts, relax_waitcnts(texts, entry, exit_))


def sunk(texts: list[str], entry, exit_) -> list[str]:
    pinned = pinned_waits(texts)
    kept = [t for k, t in enumerate(texts) if not is_wait(t) or k in pinned]
    return recompute_waitcnts(kept, entry, exit_, keep=True)


def _summary(old: list[str], new: list[str]) -> str:
    a = [t[len("s_waitcnt "):] for t in old if is_wait(t)]
    b = [t[len("s_waitcnt "):] for t in new if is_wait(t)]
    return f"waits {', '.join(a) or '-'} -> {', '.join(b) or '-'}"


@mutation("waitcnt_relax", targets=("amdgpu",))
class WaitcntRelax:
    """Weaken (``relax``) or move down (``sink``) the waits of one hot block."""

    def __init__(self, modes: tuple[str, ...] = MODES, tries: int = 8, top_windows: int = 8):
        self.tries, self.top_windows = positive(tries=tries, top_windows=top_windows)
        self.modes = option_subset(modes, MODES, "modes")

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        windows = [w for w in candidate_windows(context, individual, top=self.top_windows)
                   if any(is_wait(i.text) for i in fn.instructions[w[1]:w[2]])]
        if not windows:
            return context.reject("no hot block holds an s_waitcnt")
        reasons: list[str] = []
        for name, a, b in windows[:self.tries]:
            texts = [i.text for i in fn.instructions[a:b]]
            entry, exit_ = window_states(fn, a, b)
            modes = list(self.modes)
            context.rng.shuffle(modes)
            for mode in modes:
                new = (relaxed if mode == "relax" else sunk)(texts, entry, exit_)
                if [t for t in new if t.strip()] == texts:
                    reasons.append(f"[{a}:{b}] {mode}: every wait is already the weakest")
                    continue
                result = seal(program, name, a, b, new, operator=self.name,
                              note=f"{mode} [{a}:{b}]: {_summary(texts, new)}")
                if isinstance(result, Edit):
                    return result
                reasons.append(f"[{a}:{b}] {mode}: {result}")
        return context.reject("; ".join(reasons[:3]) or "nothing to relax")
