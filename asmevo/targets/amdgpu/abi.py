"""ABI comparison of two code objects: what a caller of K0 relies on.

Kernel names, target id, kernarg layout, every launch-relevant descriptor
field, LDS, scratch and wavefront size must match. Register counts are the
one thing an edit may change (and the entry offset, which only reflects
layout), so those are left out.
"""
from __future__ import annotations

from dataclasses import fields

from asmevo.targets.amdgpu.codeobject import CodeObject
from asmevo.targets.kernelset import (AbiDifference, common_kernels,
                                      kernel_name_difference)

# descriptor fields an edit may legitimately change
MAY_DIFFER = {"granulated_workitem_vgpr_count", "granulated_wavefront_sgpr_count",
              "accum_offset_field", "kernel_code_entry_byte_offset"}
_META_FIELDS = ("kernarg_segment_size", "kernarg_segment_align", "group_segment_fixed_size",
                "private_segment_fixed_size", "wavefront_size", "max_flat_workgroup_size")


def abi_diff(a: CodeObject, b: CodeObject) -> list[AbiDifference]:
    """Every ABI difference of ``b`` against ``a``; empty when identical."""
    out: list[AbiDifference] = []
    if str(a.target) != str(b.target) or a.e_flags != b.e_flags:
        out.append(AbiDifference(None, "target id", f"{a.target} (0x{a.e_flags:x})",
                                 f"{b.target} (0x{b.e_flags:x})"))
    if a.code_object_version != b.code_object_version:
        out.append(AbiDifference(None, "code object version", a.code_object_version,
                                 b.code_object_version))
    out += kernel_name_difference(a, b)
    for ka, kb in common_kernels(a, b):
        for f in fields(ka.descriptor):
            if f.name in MAY_DIFFER:
                continue
            va, vb = vars(ka.descriptor)[f.name], vars(kb.descriptor)[f.name]
            if va != vb:
                out.append(AbiDifference(ka.name, f"descriptor.{f.name}", va, vb))
        ma, mb = ka.meta, kb.meta
        if (ma is None) != (mb is None):
            out.append(AbiDifference(ka.name, "metadata entry", ma is not None, mb is not None))
            continue
        if ma is None or mb is None:
            continue
        for name in _META_FIELDS:
            va, vb = vars(ma)[name], vars(mb)[name]
            if va != vb:
                out.append(AbiDifference(ka.name, f"metadata.{name}", va, vb))
        la = [(x.offset, x.size, x.value_kind, x.address_space) for x in ma.args]
        lb = [(x.offset, x.size, x.value_kind, x.address_space) for x in mb.args]
        if la != lb:
            out.append(AbiDifference(ka.name, "kernarg layout", la, lb))
    return out
