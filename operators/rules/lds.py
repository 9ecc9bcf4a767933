"""``trim_lds``: give back the LDS a workgroup declares but the code can never touch.

A kernel descriptor's ``group_segment_fixed_size`` is what the runtime allocates per
workgroup, and it bounds how many workgroups share a CU (64 KiB each). Hand-written
kernels often declare far more than they use (AITer's fmha backward pre- and
post-processing kernels declare 40 KiB and touch at most 3.5 KiB: one workgroup per
CU where eight fit). This operator proves the highest LDS byte any access can touch
(:mod:`asmevo.targets.amdgpu.analysis.ranges`: the address intervals of every
reachable ``ds_*`` access, from the work-item id below the kernel's
``max_flat_workgroup_size``, wave ids, constants and shifts), and lowers the
declared size to that bound rounded up to the allocation granule (512 bytes), with
an empty code window (``Edit.descriptor``); the rebuild writes the metadata's copy.

Exact: every access the code can make stays inside the smaller allocation, LDS
contents are not outputs, and nothing else reads the size. Refused, with the reason:
an access whose address is not bounded (an interval the analysis cannot close, a
loop-carried address it widens), an access that may reach past the new size, LDS DMA
(``buffer_load ... lds`` writes at an M0-based address the analysis does not track),
FLAT memory instructions (a generic address may point into LDS), GDS and the
M0-addressed DS forms (``ds_append``, ``ds_gws_*``, ``addtid``), an unknown
instruction, a read of the LDS allocation register (``s_getreg`` of LDS_ALLOC), or a
smaller size that would not let more waves run (the registers the code needs and the
metadata's workgroup size decide).
"""
from __future__ import annotations

from dataclasses import replace

from asmevo.edits import Edit
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.targets.amdgpu.analysis.ranges import MAX, ValueRanges
from asmevo.targets.amdgpu.assembly import UNIFIED_VGPR
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.occupancy import occupancy
from asmevo.operators.rules.registers import needed_granules

LDS_GRANULE = 512          # bytes: GFX9 allocates LDS in 128-dword granules
_M0_DS = ("ds_append", "ds_consume", "ds_gws", "ds_ordered_count", "ds_read_addtid",
          "ds_write_addtid")


class Unbounded(Refused):
    """Internal: an LDS access the proof cannot bound (the message names it)."""


def lds_need(fn, program) -> int:
    """Bytes of LDS the code of ``fn`` can touch: one past the highest byte of any
    reachable access; raises Unbounded naming the access that defeats the proof."""
    packed = program.source.target.processor in UNIFIED_VGPR
    ranges = ValueRanges(fn, packed_tid=packed)
    cfg = ranges.cfg
    need = 0
    for i, e in enumerate(cfg.effects):
        if not cfg.reachable[cfg.block_of[i]]:
            continue
        _refuse_kind(e, cfg.texts[i])
        if not (e.mnemonic.startswith("ds_") and "L" in e.spaces):
            continue
        lo, hi = ranges.operand(i, e.addr)
        end = hi + e.offset + e.width
        if hi == MAX or end > 1 << 16:
            raise Unbounded(f"the address of #{i} {cfg.texts[i]!r} is not bounded "
                            f"(v in [{lo}, {hi}])")
        need = max(need, end)
    return need


def _refuse_kind(e, text: str) -> None:
    if e.unknown:
        raise Unbounded(f"unknown instruction {text!r}")
    if e.mnemonic.startswith("s_getreg") and ("LDS_ALLOC" in text or "hwreg(6" in text):
        raise Unbounded(f"{text!r} reads the LDS allocation")
    if e.mem == "flat":
        raise Unbounded(f"{text!r} is a FLAT access (its address may point into LDS)")
    if e.is_vmem and "L" in e.spaces:
        raise Unbounded(f"{text!r} is LDS DMA (an M0-based address)")
    if e.mnemonic.startswith(_M0_DS) or e.mem == "gds":
        raise Unbounded(f"{text!r} addresses LDS/GDS through M0")


def trimmed_size(need: int) -> int:
    return -(-need // LDS_GRANULE) * LDS_GRANULE


def waves_with(fn, program, lds: int) -> int:
    """Waves per SIMD with ``lds`` bytes of static LDS and the registers the code needs."""
    g_v, g_s = needed_granules(fn, program)
    kd = replace(fn.kernel.descriptor, group_segment_fixed_size=lds,
                 granulated_workitem_vgpr_count=min(
                     g_v, fn.kernel.descriptor.granulated_workitem_vgpr_count),
                 granulated_wavefront_sgpr_count=min(
                     g_s, fn.kernel.descriptor.granulated_wavefront_sgpr_count))
    return occupancy(replace(fn.kernel, descriptor=kd), program.source.target).waves_per_simd


def trim_lds_edit(fn, program, operator: str) -> Edit | Rejected:
    """The descriptor-only edit lowering the static LDS to what the code can touch."""
    old = fn.kernel.descriptor.group_segment_fixed_size
    if old == 0:
        return Rejected("the kernel declares no static LDS")
    try:
        need = lds_need(fn, program)
    except Unbounded as exc:
        return Rejected(str(exc))
    new = trimmed_size(need)
    if new >= old:
        return Rejected(f"the code may touch {need} of the {old} bytes of LDS it declares")
    before, after = waves_with(fn, program, old), waves_with(fn, program, new)
    if after <= before:
        return Rejected(f"{new} instead of {old} bytes of LDS would not run more waves "
                        f"({before} per SIMD with the registers the code needs)")
    return Edit(fn.name, 0, 0, (), operator=operator,
                note=f"LDS {old} -> {new} bytes (the code touches at most {need}; "
                     f"{before} -> {after} waves per SIMD with its registers)",
                descriptor=(("group_segment_fixed_size", new),))


@mutation("trim_lds", targets=("amdgpu",))
class TrimLds:
    """Lower the declared static LDS to what every access provably stays within."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        if fn.kernel is None:
            return context.reject("not a kernel: no descriptor")
        result = trim_lds_edit(fn, program, self.name)
        if isinstance(result, Rejected):
            return context.reject(result.reason)
        return result
