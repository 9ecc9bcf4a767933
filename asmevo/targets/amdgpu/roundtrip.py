"""Does a rebuilt code object reproduce K0? Field by field, with the first difference.

Compared: ``e_flags``, ``.text`` bytes, every kernel descriptor's 64 bytes, and
the decoded metadata (values, not bytes: the msgpack encoding is LLVM's choice).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.codeobject import CodeObject


@dataclass(frozen=True)
class Difference:
    part: str            # "e_flags", ".text", "<kernel>.kd", "metadata", "kernels"
    offset: int | None   # byte offset of the first difference, where bytes are compared
    expected: str
    got: str

    def __str__(self) -> str:
        at = f" at offset 0x{self.offset:x}" if self.offset is not None else ""
        return f"{self.part}{at}: expected {self.expected}, got {self.got}"


@dataclass(frozen=True)
class Comparison:
    path: str | None
    parts: dict[str, bool] = field(default_factory=dict)   # part -> identical?
    differences: tuple[Difference, ...] = ()

    @property
    def identical(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict:
        return {"path": self.path, "identical": self.identical, "parts": self.parts,
                "differences": [d.__dict__ | {"text": str(d)} for d in self.differences]}


def _first_diff(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _bytes_part(name: str, want: bytes, got: bytes, parts: dict, diffs: list) -> None:
    same = want == got
    parts[name] = same
    if not same:
        off = _first_diff(want, got)
        diffs.append(Difference(name, off, want[off:off + 8].hex() or f"end ({len(want)} bytes)",
                                got[off:off + 8].hex() or f"end ({len(got)} bytes)"))


def _first_value_diff(a, b, where: str = "") -> tuple[str, str, str] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return (f"{where}/{k}", repr(a.get(k, "<absent>")), repr(b.get(k, "<absent>")))
            d = _first_value_diff(a[k], b[k], f"{where}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return (f"{where}[len]", str(len(a)), str(len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_value_diff(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if a != b or type(a) is not type(b):
        return (where or "/", repr(a), repr(b))
    return None


def compare(k0: CodeObject, k1: CodeObject) -> Comparison:
    """Compare ``k1`` (rebuilt) against ``k0`` (original)."""
    parts: dict[str, bool] = {}
    diffs: list[Difference] = []
    parts["e_flags"] = k0.e_flags == k1.e_flags
    if not parts["e_flags"]:
        diffs.append(Difference("e_flags", None, f"0x{k0.e_flags:x}", f"0x{k1.e_flags:x}"))
    _bytes_part(".text", k0.text.data, k1.text.data, parts, diffs)
    names0, names1 = k0.kernel_names, k1.kernel_names
    parts["kernels"] = sorted(names0) == sorted(names1)
    if not parts["kernels"]:
        diffs.append(Difference("kernels", None, ", ".join(names0), ", ".join(names1)))
    for k in k0.kernels:
        if k.name in names1:
            _bytes_part(f"{k.name}.kd", k.kd_bytes, k1.kernel(k.name).kd_bytes, parts, diffs)
    d = _first_value_diff(k0.metadata, k1.metadata)
    parts["metadata"] = d is None
    if d:
        diffs.append(Difference(f"metadata {d[0]}", None, d[1], d[2]))
    return Comparison(k0.path, parts, tuple(diffs))
