"""The kernarg segment of one launch, byte for byte, from metadata and a launch spec.

Every AMDGPU device (emulator, hip) packs arguments through this one
function, so "identical launches" means identical bytes. Explicit arguments
come from the spec in metadata order; code-object-v5 hidden arguments are
filled the way the ROCm runtime fills them for a HIP launch.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from asmevo.targets.amdgpu.errors import AmdgpuError
from asmevo.targets.amdgpu.codeobject import Kernel
from asmevo.launch.spec import LaunchSpec, np_dtype


class KernargError(AmdgpuError):
    """A launch spec that does not fit the kernel's argument layout."""


@dataclass(frozen=True)
class ArgSlot:
    """Where one explicit argument goes in the kernarg segment."""

    name: str
    offset: int
    size: int


def slots(kernel: Kernel, spec: LaunchSpec) -> list[ArgSlot]:
    """Match the spec's arguments to the kernel's explicit arguments, in order."""
    explicit = list(kernel.meta.explicit_args) if kernel.meta else []
    if not explicit:
        missing = [a.name for a in spec.args if a.offset is None]
        if missing:
            raise KernargError("the code object's metadata lists no arguments, so the spec "
                               f"must give an offset for each; missing for {', '.join(missing)}",
                               path=str(spec.path), kernel=kernel.name)
        return [ArgSlot(a.name, int(a.offset), a.byte_size) for a in spec.args]
    if len(explicit) != len(spec.args):
        raise KernargError(f"the kernel takes {len(explicit)} explicit arguments, the spec "
                           f"gives {len(spec.args)}", path=str(spec.path), kernel=kernel.name)
    out = []
    for m, a in zip(explicit, spec.args):
        if a.kind in ("buffer", "null") and m.size != 8:
            raise KernargError(f"argument {a.name} is a pointer in the spec but {m.size} bytes "
                               f"({m.value_kind}) in the metadata", kernel=kernel.name,
                               path=str(spec.path))
        if a.kind == "pad" and m.size != a.byte_size:
            raise KernargError(f"pad {a.name} is {a.byte_size} bytes in the spec but {m.size} "
                               "in the metadata", kernel=kernel.name, path=str(spec.path))
        if a.kind == "scalar" and m.size != a.byte_size:
            raise KernargError(f"argument {a.name} is {a.byte_size} bytes in the spec but "
                               f"{m.size} in the metadata", kernel=kernel.name,
                               path=str(spec.path))
        out.append(ArgSlot(a.name, a.offset if a.offset is not None else m.offset, m.size))
    return out


def grid_dims(spec: LaunchSpec) -> int:
    """The dispatch's dimension count (the packet's setup field, hidden_grid_dims)."""
    if spec.grid[2] > 1 or spec.block[2] > 1:
        return 3
    if spec.grid[1] > 1 or spec.block[1] > 1:
        return 2
    return 1


def hidden_values(spec: LaunchSpec) -> dict[str, int]:
    """The values of the hidden arguments a HIP launch of ``spec`` sees."""
    v = {"hidden_grid_dims": grid_dims(spec), "hidden_dynamic_lds_size": spec.dynamic_lds}
    for i, axis in enumerate("xyz"):
        v[f"hidden_block_count_{axis}"] = spec.grid[i]
        v[f"hidden_group_size_{axis}"] = spec.block[i]
        v[f"hidden_remainder_{axis}"] = 0
        v[f"hidden_global_offset_{axis}"] = 0
    return v  # every other hidden argument (printf, hostcall, heap, queue...) is 0


def segment_size(kernel: Kernel, spec: LaunchSpec) -> int:
    """Bytes of the kernarg segment: the descriptor's, the metadata's, or as far as the
    spec's arguments reach, whichever is largest. A read past it reads nothing the
    launch defines."""
    size = max(kernel.kernarg_size,
               kernel.meta.kernarg_segment_size if kernel.meta else 0)
    return max(size, max((s.offset + s.size for s in slots(kernel, spec)), default=0))


def pack(kernel: Kernel, spec: LaunchSpec, values: dict[str, int | float],
         pointers: dict[str, int]) -> bytes:
    """The kernarg segment: ``pointers`` give device addresses of buffers."""
    sl = slots(kernel, spec)
    size = segment_size(kernel, spec)
    buf = bytearray(size)
    by_name = {a.name: a for a in spec.args}
    for s in sl:
        a = by_name[s.name]
        if a.kind == "buffer":
            raw = struct.pack("<Q", pointers[a.name])
        elif a.kind in ("null", "pad"):
            raw = bytes(8 if a.kind == "null" else s.size)
        else:
            dt = np_dtype(a.dtype)
            val = values.get(a.name, a.value)
            raw = np.array([val]).astype(dt).tobytes()
        if s.offset + len(raw) > size:
            raise KernargError(f"argument {s.name} at offset {s.offset} runs past the "
                               f"{size}-byte kernarg segment", kernel=kernel.name)
        buf[s.offset:s.offset + len(raw)] = raw.ljust(s.size, b"\0")[:s.size]
    hidden = hidden_values(spec)
    for m in (kernel.meta.args if kernel.meta else ()):
        if m.hidden and m.offset + m.size <= size:
            val = hidden.get(m.value_kind, 0)
            buf[m.offset:m.offset + m.size] = val.to_bytes(m.size, "little")
    return bytes(buf)
