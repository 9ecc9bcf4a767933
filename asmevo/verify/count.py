"""The instruction-count judge: the engine's *test* evaluation, a static score, no run.

It stands where the device stands in the candidate pipeline
(:data:`asmevo.verify.pipeline.COUNT`: apply, build, then this judge's
"differential" and "timing" stages). A candidate is "equal" when its kernel keeps
K0's multiset of non-``s_nop`` instructions (a necessary condition of
equivalence, not a proof: its verdicts say ``"verified": false``), and its
modeled time is :func:`static_cycles` of the built kernel. It exists to test
and benchmark the engine with real builds and no emulator.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.memo import cached
from asmevo.verdict import Timing, Verdict

# cycles per instruction class: a crude static model, enough to rank candidates
_COST = (("s_waitcnt", 4), ("global_", 8), ("buffer_", 8), ("flat_", 8), ("ds_", 4),
         ("s_load", 4), ("v_", 2), ("s_", 1))

DETAILS = {"evaluator": "instruction-count", "verified": False}


def static_cycles(instrs: list) -> int:
    """A deterministic cost: per-class cycles, ``s_nop N`` = N+1, a wait right after a
    memory instruction pays 2 more (nothing hides the latency)."""
    total = 0
    prev = ""
    for ins in instrs:
        m = ins.mnemonic
        if m == "s_nop":
            try:
                total += int(ins.operands.strip(), 0) + 1
            except ValueError:
                total += 1
        else:
            total += next((c for p, c in _COST if m.startswith(p)), 1)
        if m == "s_waitcnt" and prev.startswith(("global_", "buffer_", "s_load", "ds_")):
            total += 2
        prev = m
    return total


@cached("verify.count.score_bytes", 4096)
def score_bytes(data: bytes, kernel: str) -> tuple[int, tuple[str, ...]]:
    """(static cycles, sorted non-``s_nop`` instruction texts) of ``kernel`` in ``data``."""
    from asmevo.targets.amdgpu import load, recover
    instrs = recover(load(data, path="candidate")).function(kernel).instructions
    return static_cycles(instrs), tuple(sorted(i.text for i in instrs if i.mnemonic != "s_nop"))


@dataclass(frozen=True)
class CountJudge:
    """A :class:`asmevo.verify.pipeline.Judge` scoring built bytes against K0's build."""

    k0_data: bytes          # K0 as the pipeline builds it (not its file: the same route)
    kernel: str

    def differential(self, data: bytes) -> Verdict:
        if score_bytes(data, self.kernel)[1] != score_bytes(self.k0_data, self.kernel)[1]:
            return Verdict("mismatch", "instruction multiset changed (instruction-count "
                           "evaluator)", dict(DETAILS))
        return Verdict("equal", "unverified: instruction-count evaluator", dict(DETAILS))

    def timing(self, program, data: bytes) -> tuple[Timing, dict]:
        k0_cost = score_bytes(self.k0_data, self.kernel)[0]
        cost = score_bytes(data, self.kernel)[0]
        return Timing("modeled", "static-count", float(k0_cost), float(cost), 0.0,
                      "cycles"), {}
