"""The parameter buffer of one CUDA launch, byte for byte, from KPARAM_INFO and a spec.

The CUDA counterpart of :mod:`asmevo.targets.amdgpu.kernargs`: the spec's arguments,
in order, fill the kernel's parameters by ordinal at the offsets and sizes
``EIATTR_KPARAM_INFO`` gives; the buffer is ``EIATTR_CBANK_PARAM_SIZE`` long and
passed whole through ``CU_LAUNCH_PARAM_BUFFER_POINTER``, so identical launches
are identical bytes on every device.
"""
from __future__ import annotations

import struct

import numpy as np

from asmevo.targets.nvidia.errors import NvidiaError
from asmevo.targets.nvidia.cubin import Kernel
from asmevo.launch.spec import LaunchSpec, np_dtype


class ParamError(NvidiaError):
    """A launch spec that does not fit the kernel's parameter layout."""


def pack(kernel: Kernel, spec: LaunchSpec, values: dict, pointers: dict[str, int]) -> bytes:
    """The parameter buffer; ``pointers`` give device addresses of buffers."""
    params = sorted(kernel.params, key=lambda p: p.ordinal)
    if len(params) != len(spec.args):
        raise ParamError(f"the kernel takes {len(params)} parameters, the spec gives "
                         f"{len(spec.args)}", kernel=kernel.name, path=str(spec.path))
    size = max(kernel.param_size, max((p.offset + p.size for p in params), default=0))
    buf = bytearray(size)
    for p, a in zip(params, spec.args):
        if a.kind in ("buffer", "null"):
            if p.size != 8:
                raise ParamError(f"argument {a.name} is a pointer in the spec but parameter "
                                 f"{p.ordinal} is {p.size} bytes", kernel=kernel.name,
                                 path=str(spec.path))
            raw = struct.pack("<Q", pointers[a.name] if a.kind == "buffer" else 0)
        else:
            if a.byte_size != p.size:
                raise ParamError(f"argument {a.name} is {a.byte_size} bytes in the spec but "
                                 f"parameter {p.ordinal} is {p.size}", kernel=kernel.name,
                                 path=str(spec.path))
            raw = np.array([values.get(a.name, a.value)]).astype(np_dtype(a.dtype)).tobytes()
        buf[p.offset:p.offset + p.size] = raw
    return bytes(buf)
