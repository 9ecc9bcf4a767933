"""Register helpers the rule operators share: a register's bit in the analyses' masks,
a range as the assembler writes it, how many registers a function may use without
growing the kernel's allocation, and the granules its code needs (the descriptor fields
a trim lowers, the VGPR count that gives one more wave)."""
from __future__ import annotations

from dataclasses import replace

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.assembly import UNIFIED_VGPR, required_blocks, vgpr_granule
from asmevo.targets.amdgpu.occupancy import occupancy
from asmevo.targets.amdgpu.processors import processor
from asmevo.targets.amdgpu.program import Function, Program


MAX_EXTRA_SGPRS = 6        # VCC + FLAT_SCRATCH + XNACK_MASK (LLVM getNumExtraSGPRs, GFX9)


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


# --- what the code needs -----------------------------------------------------------------

def initial_sgprs(kd) -> int:
    """SGPRs the hardware writes before the first instruction (user + system)."""
    return (kd.user_sgpr_count + kd.enable_sgpr_workgroup_id_x + kd.enable_sgpr_workgroup_id_y
            + kd.enable_sgpr_workgroup_id_z + kd.enable_sgpr_workgroup_info
            + kd.enable_private_segment)


def _vgprs(fn: Function, program: Program) -> int:
    """VGPRs the code of ``fn`` needs, never fewer than the launch's work-item IDs."""
    kd = fn.kernel.descriptor
    packed_tid = program.source.target.processor in UNIFIED_VGPR
    return max(fn.register_usage().vgprs, 1 if packed_tid else kd.enable_vgpr_workitem_id + 1)


def needed_accum_field(fn: Function, program: Program) -> int | None:
    """gfx90a+: the lowest ``accum_offset_field`` the code allows, or None elsewhere.

    ``accum_offset`` = (field + 1) * 4 is where AGPR a0 sits in the unified register
    file; it only has to clear the VGPRs the code uses (the code names AGPRs
    relative to it), so a kernel that uses fewer VGPRs than K0 can lower it, and
    the VGPR allocation with it. Without this the offset floors the allocation.
    """
    if program.source.target.processor not in UNIFIED_VGPR:
        return None
    return -(-_vgprs(fn, program) // 4) - 1


def needed_granules(fn: Function, program: Program) -> tuple[int, int]:
    """(VGPR granule, SGPR granule) the code of ``fn`` needs, never fewer than
    what the launch itself initializes (with ``accum_offset`` lowered to the need)."""
    target = program.source.target
    kd = fn.kernel.descriptor
    used = replace(fn.register_usage(), vgprs=_vgprs(fn, program))
    zero = replace(kd, granulated_workitem_vgpr_count=0, granulated_wavefront_sgpr_count=0)
    acc = needed_accum_field(fn, program)
    if acc is not None:
        zero = replace(zero, accum_offset_field=min(acc, kd.accum_offset_field))
    g_v, _, _ = required_blocks(zero, used, target)
    sgprs = max(used.sgprs, initial_sgprs(kd)) + MAX_EXTRA_SGPRS
    g_s = max(0, -(-sgprs // 8) - 1)
    return g_v, g_s


def built_vgpr_granule(fn: Function, program: Program, g_v: int,
                       accum_field: int | None = None) -> int:
    """The VGPR granule a rebuild with descriptor granule ``g_v`` (and
    ``accum_offset_field``, default the descriptor's) ends up with: on gfx90a+
    ``accum_offset`` is a floor."""
    target = program.source.target
    if target.processor not in UNIFIED_VGPR:
        return g_v
    kd = fn.kernel.descriptor
    kd = replace(kd, granulated_workitem_vgpr_count=g_v, accum_offset_field=(
        kd.accum_offset_field if accum_field is None else accum_field))
    g, _, accum = required_blocks(kd, fn.register_usage(), target)
    total = max(g * vgpr_granule(target) + 1, accum)
    return -(-total // vgpr_granule(target)) - 1


def vgpr_trim(fn: Function, program: Program, g_v: int) -> dict:
    """Descriptor changes that bring the built VGPR granule down to ``g_v``'s, or {}."""
    kd = fn.kernel.descriptor
    acc = needed_accum_field(fn, program)
    acc = kd.accum_offset_field if acc is None else min(acc, kd.accum_offset_field)
    if built_vgpr_granule(fn, program, g_v, acc) >= built_vgpr_granule(
            fn, program, kd.granulated_workitem_vgpr_count):
        return {}
    change = {"granulated_workitem_vgpr_count": g_v}
    if acc < kd.accum_offset_field:
        change["accum_offset_field"] = acc
    return change


def next_threshold(fn: Function, program: Program) -> int | None:
    """The VGPR count that would give one more wave per SIMD (None: VGPRs are
    not what limits occupancy, or no smaller count helps)."""
    target = program.source.target
    occ = occupancy(fn.kernel, target)
    if occ.limited_by != "vgprs":
        return None
    gran = vgpr_granule(target)
    total = processor(target.processor).vgprs
    want = occ.waves_per_simd + 1
    limit = (total // want) // gran * gran
    return limit if limit > 0 else None
