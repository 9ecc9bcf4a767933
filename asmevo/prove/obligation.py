"""What a window proof is asked and what it answers: the :class:`Window` (two
instruction sequences, what is live after them, how their entry states relate, extra
assumptions and obligations) and the :class:`Result`."""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.prove.machine import Machine, Policy
from asmevo.prove.z3env import z3


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
    snapshot: object = field(default=None, repr=False)   # a refutation's entry state
    final: tuple | None = field(default=None, repr=False)   # (K0's, the candidate's) machines

    def to_json(self) -> dict:
        out = {"status": self.status, "reason": self.reason,
               "seconds": round(self.seconds, 3), "obligations": self.obligations}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out


def vreg(bit: int, accum: int) -> int:
    """The VGPR number of a liveness bit (AGPRs live above ``accum``)."""
    return bit - R.VGPR_BASE if bit < R.AGPR_BASE else accum + bit - R.AGPR_BASE


def bits(mask: int, lo: int, hi: int):
    """The set bits of ``mask`` in ``[lo, hi)``."""
    m = (mask >> lo) & ((1 << (hi - lo)) - 1)
    while m:
        low = m & -m
        yield lo + low.bit_length() - 1
        m ^= low


def fault(m: Machine):
    """Whether lane LANE of ``m``'s window faults."""
    conds = [m.faults[k] for k in sorted(m.faults)]
    return z3.Or(*conds) if conds else z3.BoolVal(False)
