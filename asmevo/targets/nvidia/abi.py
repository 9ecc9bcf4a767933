"""ABI comparison of two cubins: what a launch of K0 relies on.

Kernel names, architecture flags, the parameter layout (ordinal, offset, size),
the parameter bank size, static shared memory, required/maximum block size and
the cubin's arch must match. Register count, frame size and code length are
what a rebuild may change, so they are left out (the device reports a launch
that no longer fits as a failure).
"""
from __future__ import annotations

from asmevo.targets.nvidia.cubin import Cubin
from asmevo.targets.kernelset import (AbiDifference, common_kernels,
                                      kernel_name_difference)


def abi_diff(a: Cubin, b: Cubin) -> list[AbiDifference]:
    """Every ABI difference of ``b`` against ``a``; empty when identical."""
    out: list[AbiDifference] = []
    if (a.sm, a.e_flags) != (b.sm, b.e_flags):
        out.append(AbiDifference(None, "arch", f"sm_{a.sm} (0x{a.e_flags:x})",
                                 f"sm_{b.sm} (0x{b.e_flags:x})"))
    out += kernel_name_difference(a, b)
    for ka, kb in common_kernels(a, b):
        pa = [(p.ordinal, p.offset, p.size) for p in ka.params]
        pb = [(p.ordinal, p.offset, p.size) for p in kb.params]
        for name, va, vb in (("parameter layout", pa, pb),
                             ("parameter bank size", ka.param_size, kb.param_size),
                             ("static shared memory", ka.shared_size, kb.shared_size),
                             ("required block size", ka.req_ntid, kb.req_ntid),
                             ("maximum block size", ka.max_threads, kb.max_threads)):
            if va != vb:
                out.append(AbiDifference(ka.name, name, va, vb))
    return out
