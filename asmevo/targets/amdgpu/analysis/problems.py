"""What the static checks report: one :class:`Problem` per finding.

A :class:`Problem` names the rule, the instruction, and (for hazards) the
producing instruction with required and actual wait states, so an operator or
an LLM prompt can say exactly what to fix. The checks
(:mod:`~asmevo.targets.amdgpu.analysis.hazards`,
:mod:`~asmevo.targets.amdgpu.analysis.waitcnt`) build these values; the gate
that judges a candidate by them is :mod:`~asmevo.targets.amdgpu.analysis.gate`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.codeobject import CodeObject
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.errors import AmdgpuError


class AnalysisError(AmdgpuError):
    """A request the analysis cannot answer (a window that crosses blocks, ...)."""


@dataclass(frozen=True)
class Problem:
    kind: str                   # "hazard" or "waitcnt"
    rule: str                   # e.g. "xdl-write-valu-read", "raw"
    index: int                  # index into Function.instructions of the consumer
    address: int | None
    message: str
    function: str = ""
    producer: int | None = None  # index of the producing instruction, when there is one
    registers: tuple[str, ...] = ()
    required: int | None = None  # hazards: wait states needed
    actual: int | None = None    # hazards: wait states present (minimum over paths)
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.function}:{self.index}" if self.function else str(self.index)
        if self.address is not None:
            where += f" (0x{self.address:x})"
        return f"{self.kind}/{self.rule} at {where}: {self.message}"


def at_addresses(problems, instructions) -> list[Problem]:
    """``problems`` (of a function with the same texts and labels) with each one's
    address read from ``instructions``, the function's own: a problem's address is
    always its consumer's, the one thing of it that a remembered answer may have from
    another function with the same text (K0's lines in one, an edit's in the other)."""
    return [p if p.address == instructions[p.index].address
            else replace(p, address=instructions[p.index].address) for p in problems]


def target_family(target) -> tuple[str, bool]:
    """(family, xnack) for a TargetId, a CodeObject, or a string like "gfx942:xnack-".

    Families: "gfx90a", "gfx942" (gfx940/941/942, gfx9-4-generic) and "gfx950"
    (gfx942's rules plus its own: :mod:`asmevo.targets.amdgpu.analysis.hazards`).

    xnack "any" counts as enabled: LLVM then keeps SMEM/VMEM soft clauses safe.
    """
    if isinstance(target, CodeObject):
        target = target.target
    if isinstance(target, TargetId):
        proc, xnack = target.processor, target.xnack
    else:
        text = str(target)
        proc = text.split(":", 1)[0].split("--")[-1]
        xnack = "off" if "xnack-" in text else "on" if "xnack+" in text else "any"
    family = P.family(proc)
    if family not in P.hazard_families():
        raise AnalysisError(f"no hazard model for {proc} (the {', '.join(P.hazard_families())} "
                            "families only)")
    return family, xnack != "off"
