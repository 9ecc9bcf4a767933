"""Register helpers the rule operators share: a register's bit in the analyses' masks,
a range as the assembler writes it, and how many registers a function may use without
growing the kernel's allocation."""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.assembly import UNIFIED_VGPR, vgpr_granule
from asmevo.targets.amdgpu.program import Function, Program


def reg_bit(kind: str, r: int) -> int:
    """Register ``r`` of ``kind`` (``"s"`` or ``"v"``) as a bit of a liveness mask."""
    return 1 << ((R.VGPR_BASE if kind == "v" else R.SGPR_BASE) + r)


def reg_mask(kind: str, regs) -> int:
    """The mask of registers ``regs`` of ``kind``."""
    m = 0
    for r in regs:
        m |= reg_bit(kind, r)
    return m


def fmt_range(kind: str, first: int, n: int) -> str:
    """``n`` registers from ``first`` as the assembler writes them (``v3``, ``v[4:7]``)."""
    return f"{kind}{first}" if n == 1 else f"{kind}[{first}:{first + n - 1}]"


def allocation_limit(fn: Function, program: Program, kind: str) -> int:
    """Registers ``[0, limit)`` usable without growing the kernel's allocation."""
    used = fn.register_usage()
    if kind == "s":
        return min(used.sgprs, 102)
    if fn.kernel is None:
        return used.vgprs
    target = program.source.target
    kd = fn.kernel.descriptor
    if target.processor in UNIFIED_VGPR and used.agprs:
        return max(used.vgprs, kd.accum_offset)
    return max(used.vgprs, (kd.granulated_workitem_vgpr_count + 1) * vgpr_granule(target))
