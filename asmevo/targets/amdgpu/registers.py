"""Register operands of AMDGPU assembly text, and the counts they imply.

Counting follows AMDGPUUsage ("SGPR and VGPR Counts"): the highest register
number referenced, plus one. Register counts are recomputed from code, never
taken on trust from an edit.
"""
from __future__ import annotations


import re
from dataclasses import dataclass
from asmevo.memo import cached

_REG = re.compile(r"(?<![\w.])([sva])(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
_SPECIAL = re.compile(r"\b(vcc(?:_lo|_hi)?|flat_scratch(?:_lo|_hi)?|xnack_mask(?:_lo|_hi)?)\b")


@dataclass(frozen=True)
class RegRange:
    kind: str   # "s", "v" or "a"
    first: int
    last: int   # inclusive

    def __iter__(self):
        return iter(range(self.first, self.last + 1))

    def __str__(self) -> str:
        if self.first == self.last:
            return f"{self.kind}{self.first}"
        return f"{self.kind}[{self.first}:{self.last}]"


def register_ranges(operands: str) -> list[RegRange]:
    """Every s/v/a register range named in an operand string, in order."""
    out = []
    for m in _REG.finditer(operands):
        kind = m.group(1)
        if m.group(4) is not None:
            n = int(m.group(4))
            out.append(RegRange(kind, n, n))
        else:
            first = int(m.group(2))
            last = int(m.group(3)) if m.group(3) is not None else first
            out.append(RegRange(kind, first, last))
    return out


def special_registers(operands: str) -> set[str]:
    """vcc / flat_scratch / xnack_mask mentioned in an operand string."""
    return {m.group(1).split("_lo")[0].split("_hi")[0] for m in _SPECIAL.finditer(operands)}


@dataclass(frozen=True)
class RegisterUsage:
    """Highest-referenced-plus-one counts for one kernel's code."""

    sgprs: int = 0
    vgprs: int = 0
    agprs: int = 0
    uses_vcc: bool = False
    uses_flat_scratch: bool = False
    uses_xnack_mask: bool = False


def usage(operand_strings) -> RegisterUsage:
    """Register usage over an iterable of operand strings (one per instruction)."""
    top = {"s": 0, "v": 0, "a": 0}
    special: set[str] = set()
    for ops in operand_strings:
        tops, names = _operand_usage(ops)
        for kind, n in tops:
            top[kind] = max(top[kind], n)
        special |= names
    return RegisterUsage(top["s"], top["v"], top["a"], "vcc" in special,
                         "flat_scratch" in special, "xnack_mask" in special)


@cached("targets.amdgpu.registers._operand_usage", 1 << 16)
def _operand_usage(ops: str) -> tuple[tuple[tuple[str, int], ...], frozenset[str]]:
    """One operand string's register tops and special registers (memoized: every
    candidate's usage scans the same few hundred lines again)."""
    return (tuple((r.kind, r.last + 1) for r in register_ranges(ops)),
            frozenset(special_registers(ops)))
