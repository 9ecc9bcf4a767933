"""Code object metadata: the msgpack map in the ``NT_AMDGPU_METADATA`` note.

The raw decoded map is kept verbatim (it is what must survive a rebuild); typed
views (:class:`KernelMeta`, :class:`ArgMeta`) give the rest of asmevo the few
fields it reads. :func:`to_yaml` prints the map in the form ``llvm-mc``'s
``.amdgpu_metadata`` directive parses back to the same values: strings carry
an explicit ``!str`` tag, since LLVM's YAML reader otherwise turns ``"123"`` or
``'true'`` into numbers and booleans.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import msgpack

from asmevo import knobs
from asmevo.targets.amdgpu.errors import AmdgpuError

NT_AMDGPU_METADATA = 32


class MetadataError(AmdgpuError):
    """Metadata that is not valid msgpack or lacks required fields."""


@dataclass(frozen=True)
class ArgMeta:
    """One kernel argument as the metadata describes it."""

    offset: int
    size: int
    value_kind: str
    name: str | None = None
    address_space: str | None = None
    type_name: str | None = None

    @property
    def hidden(self) -> bool:
        return self.value_kind.startswith("hidden_")


@dataclass(frozen=True)
class KernelMeta:
    """The fields of one ``amdhsa.kernels`` entry that asmevo uses."""

    name: str
    symbol: str
    args: tuple[ArgMeta, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    agpr_count: int
    max_flat_workgroup_size: int | None
    raw: dict

    @property
    def explicit_args(self) -> tuple[ArgMeta, ...]:
        return tuple(a for a in self.args if not a.hidden)


def decode(blob: bytes, *, path: str | None = None) -> dict:
    """Decode the note's msgpack bytes into a plain map, once :func:`check_shape` has
    found them within the limits."""
    check_shape(blob, path=path)
    try:
        doc = msgpack.unpackb(blob, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise MetadataError(f"metadata note is not valid msgpack ({exc})", path=path) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("amdhsa.kernels", []), list):
        raise MetadataError("metadata note lacks an amdhsa.kernels list", path=path)
    return doc


# -- limits before decoding ------------------------------------------------------------------
# A few bytes of msgpack can ask for much more: an empty map is one byte and a Python dict
# of 64, so a 20 MB note of them needs gigabytes, and a map of a million keys printed back
# into .amdgpu_metadata keeps llvm-mc busy for minutes (its time grows with the square of
# the keys in one map). So the note is walked first, header by header, without building
# anything: its bytes, items, keys per map and nesting against ASMEVO_MAX_METADATA_*
# (real notes: a few KiB, about 1,000 items, 30 keys a map, 4 levels).

# first byte -> (bytes of the header after it, payload bytes, or the width of its length)
_FIXED = {0xc0: 0, 0xc2: 0, 0xc3: 0, 0xca: 4, 0xcb: 8, 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8,
          0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8, 0xd4: 2, 0xd5: 3, 0xd6: 5, 0xd7: 9, 0xd8: 17}
_SIZED = {0xc4: (1, 0), 0xc5: (2, 0), 0xc6: (4, 0), 0xc7: (1, 1), 0xc8: (2, 1), 0xc9: (4, 1),
          0xd9: (1, 0), 0xda: (2, 0), 0xdb: (4, 0)}        # (length width, ext type byte)
_CONTAINERS = {0xdc: (2, 1), 0xdd: (4, 1), 0xde: (2, 2), 0xdf: (4, 2)}  # (width, items/entry)


def check_shape(blob: bytes, *, path: str | None = None) -> None:
    """MetadataError unless ``blob`` is within the metadata limits (module comment)."""
    def over(limit: knobs.Limit, value: int, key: str) -> MetadataError:
        return MetadataError(limit.exceeded(value, key) or key, path=path)

    if len(blob) > knobs.MAX_METADATA_BYTES.value:
        raise over(knobs.MAX_METADATA_BYTES, len(blob), "metadata note")
    max_items, max_keys = knobs.MAX_METADATA_ITEMS.value, knobs.MAX_METADATA_MAP_KEYS.value
    max_depth = knobs.MAX_METADATA_DEPTH.value
    pos, items, pending = 0, 0, [1]           # pending: items still to read, per open level
    while pending:
        if pending[-1] == 0:
            pending.pop()
            continue
        pending[-1] -= 1
        if pos >= len(blob):
            raise MetadataError("metadata note is not valid msgpack (it ends inside a value)",
                                path=path)
        pos, count, keys = _header(blob, pos, path)
        if not count:
            continue
        items += count
        if keys > max_keys:
            raise over(knobs.MAX_METADATA_MAP_KEYS, keys, "metadata")
        if items > max_items:
            raise over(knobs.MAX_METADATA_ITEMS, items, "metadata")
        if len(pending) > max_depth:
            raise over(knobs.MAX_METADATA_DEPTH, len(pending), "metadata")
        if count > len(blob) - pos:
            raise MetadataError(f"metadata note is not valid msgpack (a container of "
                                f"{count:,} items in {len(blob) - pos:,} bytes)", path=path)
        pending.append(count)
    if pos != len(blob):
        raise MetadataError("metadata note is not valid msgpack (bytes after its value)",
                            path=path)


def _header(blob: bytes, pos: int, path: str | None) -> tuple[int, int, int]:
    """(where the next value starts, items a container holds, keys of a map) for the value
    at ``pos``; a scalar's payload is skipped."""
    b = blob[pos]
    pos += 1
    if b <= 0x7f or b >= 0xe0:
        return pos, 0, 0
    if 0x80 <= b <= 0x8f:
        return pos, 2 * (b & 0x0f), b & 0x0f
    if 0x90 <= b <= 0x9f:
        return pos, b & 0x0f, 0
    if 0xa0 <= b <= 0xbf:
        return _skip(blob, pos + (b & 0x1f), path), 0, 0
    if b in _FIXED:
        return _skip(blob, pos + _FIXED[b], path), 0, 0
    if b in _SIZED:
        width, ext = _SIZED[b]
        n = int.from_bytes(blob[pos:pos + width], "big")
        return _skip(blob, pos + width + ext + n, path), 0, 0
    if b in _CONTAINERS:
        width, per = _CONTAINERS[b]
        n = int.from_bytes(blob[pos:pos + width], "big")
        return _skip(blob, pos + width, path), per * n, n if per == 2 else 0
    raise MetadataError(f"metadata note is not valid msgpack (byte 0x{b:02x} at {pos - 1})",
                        path=path)


def _skip(blob: bytes, end: int, path: str | None) -> int:
    if end > len(blob):
        raise MetadataError("metadata note is not valid msgpack (it ends inside a value)",
                            path=path)
    return end


def kernel_entries(doc: dict, *, path: str | None = None) -> list[KernelMeta]:
    """Typed views of every kernel in a decoded metadata map."""
    out = []
    for i, k in enumerate(doc.get("amdhsa.kernels", [])):
        try:
            out.append(_kernel(k))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MetadataError(f"metadata kernel entry {i} is malformed ({exc!r})",
                                path=path) from exc
    return out


def _int(k: dict, key: str, default: int = 0) -> int:
    v = k.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{key} is {v!r}, expected an integer")
    return v


def _kernel(k: dict) -> KernelMeta:
    args = tuple(
        ArgMeta(offset=_int(a, ".offset"), size=_int(a, ".size"),
                value_kind=str(a[".value_kind"]), name=a.get(".name"),
                address_space=a.get(".address_space"), type_name=a.get(".type_name"))
        for a in k.get(".args", []))
    mfwg = k.get(".max_flat_workgroup_size")
    return KernelMeta(
        name=str(k[".name"]), symbol=str(k[".symbol"]), args=args,
        kernarg_segment_size=_int(k, ".kernarg_segment_size"),
        kernarg_segment_align=_int(k, ".kernarg_segment_align", 4),
        group_segment_fixed_size=_int(k, ".group_segment_fixed_size"),
        private_segment_fixed_size=_int(k, ".private_segment_fixed_size"),
        wavefront_size=_int(k, ".wavefront_size", 64),
        sgpr_count=_int(k, ".sgpr_count"), vgpr_count=_int(k, ".vgpr_count"),
        agpr_count=_int(k, ".agpr_count"),
        max_flat_workgroup_size=mfwg if isinstance(mfwg, int) else None, raw=k)


# -- YAML for .amdgpu_metadata -------------------------------------------

def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return "!str " + json.dumps(v)  # JSON strings are valid double-quoted YAML
    raise MetadataError(f"metadata value {v!r} of type {type(v).__name__} cannot be printed")


def _emit(v: Any, indent: int, lines: list[str], prefix: str) -> None:
    pad = " " * indent
    if isinstance(v, dict):
        if not v:
            lines.append(f"{pad}{prefix}{{}}")
            return
        first = True
        for key, val in v.items():
            lead = pad + prefix if first else pad + " " * len(prefix)
            first = False
            k = _key(key)
            if isinstance(val, (dict, list)) and val:
                lines.append(f"{lead}{k}:")
                _emit(val, indent + len(prefix) + 2, lines, "")
            elif isinstance(val, (dict, list)):
                lines.append(f"{lead}{k}: {'{}' if isinstance(val, dict) else '[]'}")
            else:
                lines.append(f"{lead}{k}: {_scalar(val)}")
    elif isinstance(v, list):
        if not v:
            lines.append(f"{pad}{prefix}[]")
            return
        for item in v:
            if isinstance(item, (dict, list)) and item:
                _emit(item, indent, lines, "- ")
            else:
                lines.append(f"{pad}- {_scalar(item) if not isinstance(item, (dict, list)) else ('{}' if isinstance(item, dict) else '[]')}")
    else:
        lines.append(f"{pad}{prefix}{_scalar(v)}")


# Keys printed bare; any other is JSON-quoted (ASCII, one line), so no key can end the
# .amdgpu_metadata block (a bare `.end_amdgpu_metadata` would) or start a statement.
_BARE_KEY = re.compile(r"\.?[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*\Z", re.ASCII)


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise MetadataError(f"metadata key {key!r} is not a string")
    bare = _BARE_KEY.match(key) and not key.startswith(".end")
    return key if bare else json.dumps(key)


def to_yaml(doc: dict) -> str:
    """The body of an ``.amdgpu_metadata`` block that reassembles to ``doc``."""
    lines = ["---"]
    _emit(doc, 0, lines, "")
    lines.append("...")
    return "\n".join(lines) + "\n"
