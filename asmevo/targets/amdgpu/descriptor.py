"""The 64-byte AMDHSA kernel descriptor, decoded field by field.

Layout and bit positions follow LLVM's AMDGPUUsage ("Kernel Descriptor" and
the COMPUTE_PGM_RSRC1/2/3 tables for GFX6-GFX9 / GFX90A / GFX940). Decoding is
lossless: :func:`encode` of a decoded descriptor gives back the same bytes, and
unknown or reserved bits are kept so nothing is silently dropped.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, fields

from asmevo.targets.amdgpu.errors import AmdgpuError

KD_SIZE = 64


class DescriptorError(AmdgpuError):
    """A kernel descriptor that cannot be decoded or reproduced."""


# (field name, register, low bit, width). Registers: rsrc1, rsrc2, rsrc3, props, preload.
_BITFIELDS: tuple[tuple[str, str, int, int], ...] = (
    ("granulated_workitem_vgpr_count", "rsrc1", 0, 6),
    ("granulated_wavefront_sgpr_count", "rsrc1", 6, 4),
    ("priority", "rsrc1", 10, 2),
    ("float_round_mode_32", "rsrc1", 12, 2),
    ("float_round_mode_16_64", "rsrc1", 14, 2),
    ("float_denorm_mode_32", "rsrc1", 16, 2),
    ("float_denorm_mode_16_64", "rsrc1", 18, 2),
    ("priv", "rsrc1", 20, 1),
    ("enable_dx10_clamp", "rsrc1", 21, 1),
    ("debug_mode", "rsrc1", 22, 1),
    ("enable_ieee_mode", "rsrc1", 23, 1),
    ("bulky", "rsrc1", 24, 1),
    ("cdbg_user", "rsrc1", 25, 1),
    ("fp16_ovfl", "rsrc1", 26, 1),
    ("rsrc1_reserved", "rsrc1", 27, 5),
    ("enable_private_segment", "rsrc2", 0, 1),
    ("user_sgpr_count", "rsrc2", 1, 5),
    ("enable_trap_handler", "rsrc2", 6, 1),
    ("enable_sgpr_workgroup_id_x", "rsrc2", 7, 1),
    ("enable_sgpr_workgroup_id_y", "rsrc2", 8, 1),
    ("enable_sgpr_workgroup_id_z", "rsrc2", 9, 1),
    ("enable_sgpr_workgroup_info", "rsrc2", 10, 1),
    ("enable_vgpr_workitem_id", "rsrc2", 11, 2),
    ("enable_exception_address_watch", "rsrc2", 13, 1),
    ("enable_exception_memory", "rsrc2", 14, 1),
    ("granulated_lds_size", "rsrc2", 15, 9),
    ("enable_exception_ieee_754_fp_invalid_operation", "rsrc2", 24, 1),
    ("enable_exception_fp_denormal_source", "rsrc2", 25, 1),
    ("enable_exception_ieee_754_fp_division_by_zero", "rsrc2", 26, 1),
    ("enable_exception_ieee_754_fp_overflow", "rsrc2", 27, 1),
    ("enable_exception_ieee_754_fp_underflow", "rsrc2", 28, 1),
    ("enable_exception_ieee_754_fp_inexact", "rsrc2", 29, 1),
    ("enable_exception_int_divide_by_zero", "rsrc2", 30, 1),
    ("rsrc2_reserved", "rsrc2", 31, 1),
    ("accum_offset_field", "rsrc3", 0, 6),
    ("rsrc3_reserved_lo", "rsrc3", 6, 10),
    ("tg_split", "rsrc3", 16, 1),
    ("rsrc3_reserved_hi", "rsrc3", 17, 15),
    ("enable_sgpr_private_segment_buffer", "props", 0, 1),
    ("enable_sgpr_dispatch_ptr", "props", 1, 1),
    ("enable_sgpr_queue_ptr", "props", 2, 1),
    ("enable_sgpr_kernarg_segment_ptr", "props", 3, 1),
    ("enable_sgpr_dispatch_id", "props", 4, 1),
    ("enable_sgpr_flat_scratch_init", "props", 5, 1),
    ("enable_sgpr_private_segment_size", "props", 6, 1),
    ("props_reserved_lo", "props", 7, 3),
    ("enable_wavefront_size32", "props", 10, 1),
    ("uses_dynamic_stack", "props", 11, 1),
    ("props_reserved_hi", "props", 12, 4),
    ("kernarg_preload_spec_length", "preload", 0, 7),
    ("kernarg_preload_spec_offset", "preload", 7, 9),
)

# byte layout: group, private, kernarg, reserved0(4), entry(i64), reserved1(20),
# rsrc3, rsrc1, rsrc2, props(u16), preload(u16), reserved2(4)
_STRUCT = struct.Struct("<IIIIq20sIIIHH4s")
assert _STRUCT.size == KD_SIZE


@dataclass(frozen=True)
class KernelDescriptor:
    """Every field of one kernel descriptor (code object v4-v6, GFX9 family)."""

    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    reserved0: int
    kernel_code_entry_byte_offset: int
    reserved1: bytes
    reserved2: bytes
    # COMPUTE_PGM_RSRC1
    granulated_workitem_vgpr_count: int
    granulated_wavefront_sgpr_count: int
    priority: int
    float_round_mode_32: int
    float_round_mode_16_64: int
    float_denorm_mode_32: int
    float_denorm_mode_16_64: int
    priv: int
    enable_dx10_clamp: int
    debug_mode: int
    enable_ieee_mode: int
    bulky: int
    cdbg_user: int
    fp16_ovfl: int
    rsrc1_reserved: int
    # COMPUTE_PGM_RSRC2
    enable_private_segment: int
    user_sgpr_count: int
    enable_trap_handler: int
    enable_sgpr_workgroup_id_x: int
    enable_sgpr_workgroup_id_y: int
    enable_sgpr_workgroup_id_z: int
    enable_sgpr_workgroup_info: int
    enable_vgpr_workitem_id: int
    enable_exception_address_watch: int
    enable_exception_memory: int
    granulated_lds_size: int
    enable_exception_ieee_754_fp_invalid_operation: int
    enable_exception_fp_denormal_source: int
    enable_exception_ieee_754_fp_division_by_zero: int
    enable_exception_ieee_754_fp_overflow: int
    enable_exception_ieee_754_fp_underflow: int
    enable_exception_ieee_754_fp_inexact: int
    enable_exception_int_divide_by_zero: int
    rsrc2_reserved: int
    # COMPUTE_PGM_RSRC3 (GFX90A/GFX940 layout)
    accum_offset_field: int
    rsrc3_reserved_lo: int
    tg_split: int
    rsrc3_reserved_hi: int
    # kernel_code_properties
    enable_sgpr_private_segment_buffer: int
    enable_sgpr_dispatch_ptr: int
    enable_sgpr_queue_ptr: int
    enable_sgpr_kernarg_segment_ptr: int
    enable_sgpr_dispatch_id: int
    enable_sgpr_flat_scratch_init: int
    enable_sgpr_private_segment_size: int
    props_reserved_lo: int
    enable_wavefront_size32: int
    uses_dynamic_stack: int
    props_reserved_hi: int
    # kernarg preload
    kernarg_preload_spec_length: int
    kernarg_preload_spec_offset: int

    # -- derived values -------------------------------------------------
    @property
    def accum_offset(self) -> int:
        """First AGPR in the unified register file, in VGPRs (GFX90A+)."""
        return (self.accum_offset_field + 1) * 4

    def as_dict(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {}
        for f in fields(self):
            v = vars(self)[f.name]
            out[f.name] = v.hex() if isinstance(v, bytes) else v
        return out


def decode(data: bytes, *, kernel: str | None = None, path: str | None = None) -> KernelDescriptor:
    """Decode one descriptor; ``data`` must be exactly 64 bytes."""
    if len(data) != KD_SIZE:
        raise DescriptorError(f"kernel descriptor is {len(data)} bytes, expected {KD_SIZE}",
                              path=path, kernel=kernel)
    (group, private, kernarg, res0, entry, res1, rsrc3, rsrc1, rsrc2,
     props, preload, res2) = _STRUCT.unpack(data)
    regs = {"rsrc1": rsrc1, "rsrc2": rsrc2, "rsrc3": rsrc3, "props": props,
            "preload": preload}
    values = {name: (regs[reg] >> lo) & ((1 << width) - 1)
              for name, reg, lo, width in _BITFIELDS}
    return KernelDescriptor(
        group_segment_fixed_size=group, private_segment_fixed_size=private,
        kernarg_size=kernarg, reserved0=res0, kernel_code_entry_byte_offset=entry,
        reserved1=res1, reserved2=res2, **values)


def registers(kd: KernelDescriptor) -> dict[str, int]:
    """The packed register words (rsrc1/2/3, props, preload) of ``kd``."""
    regs = dict.fromkeys(("rsrc1", "rsrc2", "rsrc3", "props", "preload"), 0)
    for name, reg, lo, width in _BITFIELDS:
        value = vars(kd)[name]
        if not 0 <= value < (1 << width):
            raise DescriptorError(f"descriptor field {name}={value} does not fit {width} bits")
        regs[reg] |= value << lo
    return regs


def encode(kd: KernelDescriptor) -> bytes:
    """The 64 bytes of ``kd``: the exact inverse of :func:`decode`."""
    r = registers(kd)
    return _STRUCT.pack(kd.group_segment_fixed_size, kd.private_segment_fixed_size,
                        kd.kernarg_size, kd.reserved0, kd.kernel_code_entry_byte_offset,
                        kd.reserved1, r["rsrc3"], r["rsrc1"], r["rsrc2"], r["props"],
                        r["preload"], kd.reserved2)
