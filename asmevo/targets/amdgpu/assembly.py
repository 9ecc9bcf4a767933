"""Printing a :class:`Program` as one reassemblable ``.s`` file.

The ``.amdhsa_kernel`` block must reproduce the K0 descriptor exactly. The
traps handled here: granulated register counts are re-derived by llvm-mc from
``next_free_*`` plus implicit extra SGPRs (VCC, XNACK mask), so we choose
``next_free_*`` values that land in the same granule; ``reserve_xnack_mask``
must match the target id; ``accum_offset`` exists only on gfx90a+; and fields
that no directive controls must be zero, or the rebuild is refused.

Nothing from the input file is printed unchecked: names must match the
assembler's identifier grammar (:mod:`names`), instruction text must be a plain
instruction line (:func:`~asmevo.targets.amdgpu.sanitize.instruction_shaped`),
metadata strings are JSON-quoted (:mod:`metadata`), everything else is a number.
"""
from __future__ import annotations

import json

from asmevo.targets.amdgpu import metadata as meta
from asmevo.targets.amdgpu.descriptor import DescriptorError, KernelDescriptor
from asmevo.targets.amdgpu.elf import CodeObjectError, TargetId
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.names import require_printable, shown
from asmevo.targets.amdgpu.program import Function, Instruction, Label, Program
from asmevo.targets.amdgpu.registers import RegisterUsage
from asmevo.targets.amdgpu.sanitize import instruction_shaped

UNIFIED_VGPR = P.names(lambda p: p.unified_vgpr)

# descriptor fields that no .amdhsa_ directive sets; they must be zero to reassemble
_NO_DIRECTIVE = ("priority", "priv", "debug_mode", "bulky", "cdbg_user", "rsrc1_reserved",
                 "enable_trap_handler", "enable_exception_address_watch",
                 "enable_exception_memory", "granulated_lds_size", "rsrc2_reserved",
                 "rsrc3_reserved_lo", "rsrc3_reserved_hi", "props_reserved_lo",
                 "props_reserved_hi", "enable_wavefront_size32", "reserved0")

_SIMPLE = (  # (directive, descriptor field)
    ("group_segment_fixed_size", "group_segment_fixed_size"),
    ("private_segment_fixed_size", "private_segment_fixed_size"),
    ("kernarg_size", "kernarg_size"),
    ("user_sgpr_count", "user_sgpr_count"),
    ("user_sgpr_dispatch_ptr", "enable_sgpr_dispatch_ptr"),
    ("user_sgpr_queue_ptr", "enable_sgpr_queue_ptr"),
    ("user_sgpr_kernarg_segment_ptr", "enable_sgpr_kernarg_segment_ptr"),
    ("user_sgpr_dispatch_id", "enable_sgpr_dispatch_id"),
    ("user_sgpr_private_segment_size", "enable_sgpr_private_segment_size"),
    ("uses_dynamic_stack", "uses_dynamic_stack"),
    ("system_sgpr_workgroup_id_x", "enable_sgpr_workgroup_id_x"),
    ("system_sgpr_workgroup_id_y", "enable_sgpr_workgroup_id_y"),
    ("system_sgpr_workgroup_id_z", "enable_sgpr_workgroup_id_z"),
    ("system_sgpr_workgroup_info", "enable_sgpr_workgroup_info"),
    ("system_vgpr_workitem_id", "enable_vgpr_workitem_id"),
    ("float_round_mode_32", "float_round_mode_32"),
    ("float_round_mode_16_64", "float_round_mode_16_64"),
    ("float_denorm_mode_32", "float_denorm_mode_32"),
    ("float_denorm_mode_16_64", "float_denorm_mode_16_64"),
    ("dx10_clamp", "enable_dx10_clamp"),
    ("ieee_mode", "enable_ieee_mode"),
    ("fp16_overflow", "fp16_ovfl"),
    ("exception_fp_ieee_invalid_op", "enable_exception_ieee_754_fp_invalid_operation"),
    ("exception_fp_denorm_src", "enable_exception_fp_denormal_source"),
    ("exception_fp_ieee_div_zero", "enable_exception_ieee_754_fp_division_by_zero"),
    ("exception_fp_ieee_overflow", "enable_exception_ieee_754_fp_overflow"),
    ("exception_fp_ieee_underflow", "enable_exception_ieee_754_fp_underflow"),
    ("exception_fp_ieee_inexact", "enable_exception_ieee_754_fp_inexact"),
    ("exception_int_div_zero", "enable_exception_int_divide_by_zero"),
)

SGPR_GRANULE = 8
MAX_NEXT_FREE_SGPR = 102   # addressable SGPRs on GFX9; llvm-mc rejects more


def vgpr_granule(target: TargetId) -> int:
    return P.processor(target.processor).vgpr_granule


def extra_sgprs(target: TargetId) -> int:
    """SGPRs llvm-mc adds to next_free_sgpr: the XNACK mask when xnack may be on."""
    return 2 if target.xnack in ("any", "on") else 0


def required_blocks(kd: KernelDescriptor, used: RegisterUsage, target: TargetId) -> tuple[int, int, int]:
    """(vgpr granule, sgpr granule, accum_offset) covering both ``kd`` and the code."""
    accum = kd.accum_offset if target.processor in UNIFIED_VGPR else 0
    if target.processor in UNIFIED_VGPR:
        accum = max(accum, -(-max(used.vgprs, 1) // 4) * 4)
        total = accum + used.agprs if used.agprs else max(used.vgprs, 1)
    else:
        total = max(used.vgprs, used.agprs, 1)
    vg = vgpr_granule(target)
    need_v = -(-total // vg) - 1
    sg = used.sgprs + (2 if used.uses_vcc else 0) + extra_sgprs(target)
    need_s = -(-max(sg, 1) // SGPR_GRANULE) - 1
    return (max(kd.granulated_workitem_vgpr_count, need_v),
            max(kd.granulated_wavefront_sgpr_count, need_s), accum)


def architected_flat_scratch(target: TargetId) -> bool:
    """gfx940+ set up scratch in hardware: no private-segment-buffer user SGPRs."""
    return P.processor(target.processor).architected_scratch


def kernel_block(fn: Function, target: TargetId, cov: int, path: str | None = None) -> str:
    """The ``.amdhsa_kernel`` block reproducing ``fn.kernel``'s descriptor."""
    k = fn.kernel
    assert k is not None
    require_printable(k.name, what="kernel", path=path)
    kd = k.descriptor
    values = vars(kd)
    bad = [f for f in _NO_DIRECTIVE if values[f]]
    if bad:
        raise DescriptorError("descriptor fields without an assembler directive are set: "
                              + ", ".join(f"{f}={values[f]}" for f in bad), kernel=k.name,
                              path=path)
    if fn.edited:
        g_v, g_s, accum = required_blocks(kd, fn.register_usage(), target)
    else:
        g_v, g_s = kd.granulated_workitem_vgpr_count, kd.granulated_wavefront_sgpr_count
        accum = kd.accum_offset
    unified = target.processor in UNIFIED_VGPR
    next_vgpr = max(g_v * vgpr_granule(target) + 1, accum if unified else 0)
    next_sgpr = max(0, g_s * SGPR_GRANULE + 1 - extra_sgprs(target))
    reserve_vcc = 0
    if next_sgpr > MAX_NEXT_FREE_SGPR:
        # the top granules are only reachable with VCC (and XNACK) counted on top
        next_sgpr, reserve_vcc = MAX_NEXT_FREE_SGPR, 1
    lines = [f".amdhsa_kernel {k.name}"]
    for directive, fld in _SIMPLE:
        lines.append(f"  .amdhsa_{directive} {values[fld]}")
    if architected_flat_scratch(target):
        lines.append(f"  .amdhsa_enable_private_segment {kd.enable_private_segment}")
    else:
        lines.append("  .amdhsa_system_sgpr_private_segment_wavefront_offset "
                     f"{kd.enable_private_segment}")
    if not architected_flat_scratch(target):
        lines.append("  .amdhsa_user_sgpr_private_segment_buffer "
                     f"{kd.enable_sgpr_private_segment_buffer}")
        lines.append(f"  .amdhsa_user_sgpr_flat_scratch_init {kd.enable_sgpr_flat_scratch_init}")
        lines.append("  .amdhsa_reserve_flat_scratch 0")
    elif kd.enable_sgpr_flat_scratch_init or kd.enable_sgpr_private_segment_buffer:
        raise DescriptorError("flat_scratch_init/private_segment_buffer set on a target with "
                              "architected flat scratch", kernel=k.name, path=path)
    if target.processor in UNIFIED_VGPR:
        lines.append(f"  .amdhsa_user_sgpr_kernarg_preload_length {kd.kernarg_preload_spec_length}")
        lines.append(f"  .amdhsa_user_sgpr_kernarg_preload_offset {kd.kernarg_preload_spec_offset}")
        lines.append(f"  .amdhsa_accum_offset {accum}")
        lines.append(f"  .amdhsa_tg_split {kd.tg_split}")
    elif kd.kernarg_preload_spec_length or kd.tg_split or kd.accum_offset_field:
        raise DescriptorError(f"{P.CDNA2}+ descriptor fields set on an older target", kernel=k.name,
                              path=path)
    lines.append(f"  .amdhsa_next_free_vgpr {next_vgpr}")
    lines.append(f"  .amdhsa_next_free_sgpr {next_sgpr}")
    lines.append(f"  .amdhsa_reserve_vcc {reserve_vcc}")
    if target.xnack != "unsupported":
        lines.append(f"  .amdhsa_reserve_xnack_mask {1 if target.xnack in ('any', 'on') else 0}")
    lines.append(".end_amdhsa_kernel")
    return "\n".join(lines)


def _instruction_line(ins: Instruction, path: str | None) -> str:
    if ins.raw:
        assert ins.encoding is not None
        words = [int.from_bytes(ins.encoding[i:i + 4], "little")
                 for i in range(0, len(ins.encoding), 4)]
        note = "".join(c if " " <= c <= "~" else "?" for c in ins.text[:120])
        return "  .long " + ", ".join(f"0x{w:08x}" for w in words) + f"  // {note}"
    if not instruction_shaped(ins.text):
        raise CodeObjectError(f"instruction text {shown(ins.text)} is not a plain instruction "
                              "line; it is not printed into assembly", path=path,
                              address=ins.address)
    return f"  {ins.text}"


def function_text(fn: Function, path: str | None = None) -> list[str]:
    """The function's lines; every name printed is checked against the identifier grammar."""
    require_printable(fn.name, what="kernel" if fn.kernel is not None else "function", path=path)
    q = json.dumps(fn.name)
    lines = []
    if fn.kernel is not None or fn.symbol_type == "function":
        lines += [f".globl {q}" if fn.kernel is not None else f".local {q}",
                  f".type {q},@function"]
    if fn.entry % 256 == 0:
        lines.append(".p2align 8")
    lines.append(f"{q}:")
    for item in fn.items:
        if isinstance(item, Label):
            name = require_printable(item.name, what="label", path=path)
            lines.append(f"{json.dumps(name) if not name.startswith('.L') else name}:")
        else:
            lines.append(_instruction_line(item, path))
    return lines


def to_asm(program: Program, *, text_only: bool = False) -> str:
    """The whole program as assembler source for ``llvm-mc`` (``text_only``: just
    ``.text``, what checking instruction encodings needs: no descriptor, no metadata)."""
    co = program.source
    out = [f'.amdgcn_target "{co.target.triple_target}"',
           f".amdhsa_code_object_version {co.code_object_version}",
           ".text"]
    if program.prefix:
        out.append("  .byte " + ", ".join(str(b) for b in program.prefix))
    for fn in program.functions:
        out += function_text(fn, co.path)
    if text_only:
        return "\n".join(out + [""])
    out += [".rodata"]
    for fn in sorted(program.kernels, key=lambda f: f.kernel.kd_address):
        out += [".p2align 6", kernel_block(fn, co.target, co.code_object_version, co.path)]
    out += [".amdgpu_metadata", meta.to_yaml(program.metadata or co.metadata).rstrip("\n"),
            ".end_amdgpu_metadata", ""]
    return "\n".join(out)


def with_register_counts(program: Program) -> Program:
    """``program`` with metadata register counts raised to what its code uses, and the
    metadata's static LDS size equal to the descriptor's (an edit may set it).

    Counts only grow here: K0's declared counts stay when the code uses fewer
    (an operator that wants fewer lowers the descriptor explicitly).
    """
    import copy
    from dataclasses import replace as _replace

    doc = copy.deepcopy(program.metadata or program.source.metadata)
    changed = False
    by_symbol = {k.get(".symbol"): k for k in doc.get("amdhsa.kernels", [])}
    for fn in program.kernels:
        entry = by_symbol.get(f"{fn.name}.kd")
        if entry is None or not fn.edited:
            continue
        used = fn.register_usage()
        sgprs = used.sgprs + (2 if used.uses_vcc else 0) + extra_sgprs(program.source.target)
        for key, need in ((".vgpr_count", used.vgprs), (".agpr_count", used.agprs),
                          (".sgpr_count", sgprs)):
            if key in entry and isinstance(entry[key], int) and need > entry[key]:
                entry[key] = need
                changed = True
        lds = fn.kernel.descriptor.group_segment_fixed_size if fn.kernel else None
        if lds is not None and isinstance(entry.get(".group_segment_fixed_size"), int) \
                and entry[".group_segment_fixed_size"] != lds:
            entry[".group_segment_fixed_size"] = lds       # an edit set the descriptor's
            changed = True
    return _replace(program, metadata=doc) if changed else program
