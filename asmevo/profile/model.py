"""The profile of one launch: per function and instruction, what ran and what it cost.

A :class:`Profile` holds, per function and per instruction: executions
(wave-level), active lanes (sums), cycles attributed to it and the stall part
of those cycles. Its ``source`` says where the numbers came from: ``"modeled"``
(:mod:`asmevo.profile.modeled`, the timing model) or ``"measured"``
(:mod:`asmevo.profile.rocprof`, hardware counters). Window ranking
(:mod:`asmevo.profile.windows`) reads either the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from asmevo.errors import AsmevoError
from asmevo.targets.amdgpu.program import Program


class ProfileError(AsmevoError):
    """A profile that cannot be computed or read."""


@dataclass
class FunctionCosts:
    """Per instruction of one function (indices of ``Function.instructions``)."""

    name: str
    executions: np.ndarray
    lanes: np.ndarray
    cycles: np.ndarray          # issue + stall (modeled) or sampled/latency (measured)
    stalls: np.ndarray


@dataclass
class Profile:
    source: str                         # "modeled" | "measured"
    functions: dict[str, FunctionCosts]
    total_cycles: float = 0.0           # the launch (modeled cycles, or samples)
    unit: str = "cycles"                # "cycles" | "samples"
    detail: dict = field(default_factory=dict)
    unmatched: int = 0
    mismatched: int = 0

    @property
    def label(self) -> str:
        return f"{self.source} {self.unit}"


def empty_costs(program: Program) -> dict[str, FunctionCosts]:
    """Zero costs for every instruction of every function of ``program`` (readers add to them)."""
    out = {}
    for fn in program.functions:
        n = len(fn.instructions)
        out[fn.name] = FunctionCosts(fn.name, np.zeros(n, np.int64), np.zeros(n, np.int64),
                                     np.zeros(n), np.zeros(n))
    return out
