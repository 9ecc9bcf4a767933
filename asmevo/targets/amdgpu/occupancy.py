"""Waves per SIMD implied by a kernel's registers and LDS (GFX9 family).

Numbers from AMDGPUUsage and the CDNA2/CDNA3 ISA guides: 512 unified VGPRs
per lane per SIMD on gfx90a/gfx942 (allocated in granules of 8), 256 on older
GFX9 (granules of 4); 800 SGPRs per SIMD (granules of 16); 64 KiB LDS per CU;
4 SIMDs per CU; at most 8 waves per SIMD on gfx90a/gfx942 (10 before).
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu.codeobject import Kernel
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu import processors as P

UNIFIED = P.names(lambda p: p.unified_vgpr)
LDS_PER_CU = 65536
SIMDS_PER_CU = 4


@dataclass(frozen=True)
class Occupancy:
    waves_per_simd: int
    limited_by: str
    vgprs: int          # allocated (granule-rounded) VGPRs per lane, AGPRs included
    sgprs: int
    lds_bytes: int
    workgroup_size: int


def occupancy(kernel: Kernel, target: TargetId, workgroup_size: int | None = None,
              dynamic_lds: int = 0) -> Occupancy:
    """Occupancy of ``kernel``; the workgroup size defaults to its metadata maximum."""
    proc = P.processor(target.processor)
    kd = kernel.descriptor
    vgran = proc.vgpr_granule
    vgprs = (kd.granulated_workitem_vgpr_count + 1) * vgran
    sgprs = (kd.granulated_wavefront_sgpr_count + 1) * 8
    max_waves = proc.max_waves
    limits = {"waves": max_waves,
              "vgprs": proc.vgprs // vgprs,
              "sgprs": proc.sgprs // (-(-sgprs // 16) * 16)}
    wg = workgroup_size or (kernel.meta.max_flat_workgroup_size if kernel.meta else None) or 256
    lds = kd.group_segment_fixed_size + dynamic_lds
    if lds:
        waves_per_wg = -(-wg // 64)
        groups = LDS_PER_CU // lds
        limits["lds"] = (groups * waves_per_wg) // SIMDS_PER_CU
    name = min(limits, key=lambda k: (limits[k], k != "waves"))
    return Occupancy(max(0, min(limits.values())), name, vgprs, sgprs, lds, wg)
