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

from asmevo.errors import AsmevoError

NT_AMDGPU_METADATA = 32


class MetadataError(AsmevoError):
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
    """Decode the note's msgpack bytes into a plain map."""
    try:
        doc = msgpack.unpackb(blob, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise MetadataError(f"metadata note is not valid msgpack ({exc})", path=path) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("amdhsa.kernels", []), list):
        raise MetadataError("metadata note lacks an amdhsa.kernels list", path=path)
    if _depth(doc) > MAX_DEPTH:
        raise MetadataError(f"metadata nests deeper than {MAX_DEPTH} levels", path=path)
    return doc


MAX_DEPTH = 32   # real metadata nests 4 deep; every later walk of the map recurses


def _depth(doc: Any) -> int:
    """How deeply maps and lists nest in ``doc`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                break
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


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
