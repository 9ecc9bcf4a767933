"""What ``asmevo inspect`` shows about each kernel: ABI, resources, code shape."""
from __future__ import annotations

from asmevo.targets.amdgpu.codeobject import CodeObject, Kernel
from asmevo.targets.amdgpu.occupancy import UNIFIED, occupancy
from asmevo.targets.amdgpu.program import Program


def agpr_count(kernel: Kernel, processor: str, allocated_vgprs: int,
               code_agprs: int) -> tuple[int | None, str, int | None]:
    """(AGPRs, where the number comes from, AGPRs the descriptor allocates).

    Metadata ``.agpr_count`` wins when present. Hand-written objects (AITer's)
    omit it; on the unified register file (gfx90a, gfx94x, gfx950) the
    descriptor still fixes the AGPR part of the allocation: everything from
    ``accum_offset`` up to the granulated VGPR count. The count is then the
    code's highest AGPR + 1 (what LLVM would have written), checked against
    that allocation.
    """
    m = kernel.meta
    unified = processor in UNIFIED
    room = max(allocated_vgprs - kernel.descriptor.accum_offset, 0) if unified else None
    if m is not None and ".agpr_count" in m.raw:
        return m.agpr_count, "metadata", room
    if not unified:
        return (code_agprs if code_agprs else 0), "code", None
    return code_agprs, "code and descriptor", room


def kernel_summaries(co: CodeObject, program: Program, only: str | None = None, *,
                     llvm: str | None = None) -> list[dict]:
    """One plain dict per kernel (JSON-ready); ``llvm`` names the toolchain used."""
    out = []
    names = [only] if only else co.kernel_names
    for name in names:
        k = co.kernel(name)
        fn = program.function(name)
        kd = k.descriptor
        used = fn.register_usage()
        occ = occupancy(k, co.target)
        m = k.meta
        agprs, agpr_source, agpr_room = agpr_count(k, co.target.processor, occ.vgprs, used.agprs)
        out.append({
            "name": k.name,
            "target": str(co.target),
            "code_object_version": co.code_object_version,
            "kernarg_size": k.kernarg_size,
            "args": [{"offset": a.offset, "size": a.size, "kind": a.value_kind,
                      "name": a.name, "address_space": a.address_space}
                     for a in (m.args if m else ())],
            "sgprs": m.sgpr_count if m else None,
            "vgprs": m.vgpr_count if m else None,
            "agprs": agprs,
            "agprs_from": agpr_source,
            "agprs_allocated": agpr_room,
            "sgprs_used_by_code": used.sgprs,
            "vgprs_used_by_code": used.vgprs,
            "agprs_used_by_code": used.agprs,
            "granulated_vgprs": occ.vgprs,
            "granulated_sgprs": occ.sgprs,
            "accum_offset": kd.accum_offset,
            "lds_bytes": kd.group_segment_fixed_size,
            "scratch_bytes": kd.private_segment_fixed_size,
            "wavefront_size": m.wavefront_size if m else (32 if kd.enable_wavefront_size32 else 64),
            "instructions": len(fn.instructions),
            "basic_blocks": len(fn.blocks()),
            "code_bytes": k.code_size,
            "kernarg_preload_dwords": kd.kernarg_preload_spec_length,
            "occupancy_waves_per_simd": occ.waves_per_simd,
            "occupancy_limited_by": occ.limited_by,
            "occupancy_workgroup_size": occ.workgroup_size,
            "route": str(program.route) if program.route is not None else None,
            "llvm": llvm,
        })
    return out


def render(summaries: list[dict]) -> str:
    lines = []
    for s in summaries:
        lines.append(f"kernel {s['name']}  [{s['target']}, code object v{s['code_object_version']}]")
        agpr = f"agpr {s['agprs']}"
        if s["agprs_from"] != "metadata":
            room = s["agprs_allocated"]
            agpr += (f" [no .agpr_count: from the code; descriptor allocates {room} above "
                     f"accum_offset]" if room is not None else " [from the code]")
        lines.append(f"  registers   sgpr {s['sgprs']}  vgpr {s['vgprs']}  {agpr}"
                     f"  (code uses s{s['sgprs_used_by_code']} v{s['vgprs_used_by_code']}"
                     f" a{s['agprs_used_by_code']}; allocated v{s['granulated_vgprs']}"
                     f" s{s['granulated_sgprs']}, accum_offset {s['accum_offset']})")
        lines.append(f"  memory      LDS {s['lds_bytes']} B  scratch {s['scratch_bytes']} B"
                     f"  wavefront {s['wavefront_size']}")
        lines.append(f"  code        {s['instructions']} instructions, {s['basic_blocks']} basic "
                     f"blocks, {s['code_bytes']} bytes")
        if s.get("route"):
            lines.append(f"  route       {s['route']}")
        if s.get("llvm"):
            lines.append(f"  toolchain   {s['llvm']}")
        lines.append(f"  occupancy   {s['occupancy_waves_per_simd']} waves/SIMD (limited by "
                     f"{s['occupancy_limited_by']}, workgroup {s['occupancy_workgroup_size']})")
        lines.append(f"  kernargs    {s['kernarg_size']} bytes"
                     + (f", {s['kernarg_preload_dwords']} dwords preloaded"
                        if s['kernarg_preload_dwords'] else ""))
        for a in s["args"]:
            label = a["name"] or ""
            space = f" {a['address_space']}" if a["address_space"] else ""
            lines.append(f"    +{a['offset']:<4} {a['size']:>2} B  {a['kind']}{space} {label}".rstrip())
    return "\n".join(lines)
