"""Disassembly through ``llvm-objdump``: one :class:`RawLine` per instruction word group.

objdump prints ``<text>  // <address>: <dwords> [<symbol+off>]``; the dwords are
the instruction's exact encoding, so we never trust the text alone: the
program printer checks every line reassembles to those bytes.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from asmevo.targets.amdgpu.elf import CodeObjectError, TargetId
from asmevo.targets.amdgpu.toolchain import Toolchain

_LINE = re.compile(
    r"^\s+(?P<text>.*?)\s*//\s*(?P<addr>[0-9A-Fa-f]+):\s*(?P<enc>(?:[0-9A-Fa-f]{8}\s*)+?)"
    r"(?:\s*<(?P<sym>[^>]*)>)?\s*$")


@dataclass(frozen=True)
class RawLine:
    address: int
    text: str
    encoding: bytes


def disassemble(tc: Toolchain, data: bytes, target: TargetId, *,
                path: str | None = None) -> list[RawLine]:
    """Every instruction of ``.text``, in address order (replayed from earlier output
    of the same llvm-objdump where that is exact: :mod:`asmevo.targets.amdgpu.sweep`)."""
    from asmevo.targets.amdgpu.sweep import memo_for
    memo = memo_for(str(tc.bin_dir), tuple(target.mc_args()))
    replayed = memo.replay(data, RawLine)
    if replayed is not None:
        return replayed
    lines = _objdump(tc, data, target, path=path)
    memo.learn(data, lines)
    return lines


def _objdump(tc: Toolchain, data: bytes, target: TargetId, *, path: str | None) -> list[RawLine]:
    with tempfile.TemporaryDirectory(prefix="asmevo-dis-") as tmp:
        f = Path(tmp) / "k.co"
        f.write_bytes(data)
        out = tc.run("llvm-objdump", ["-d", "--section=.text", *target.mc_args(), str(f)]
                     ).stdout.decode(errors="replace")
    lines = []
    for ln in out.splitlines():
        m = _LINE.match(ln)
        if not m:
            continue
        words = m.group("enc").split()
        enc = b"".join(int(w, 16).to_bytes(4, "little") for w in words)
        text = m.group("text").strip()
        lines.append(RawLine(int(m.group("addr"), 16), text, enc))
    if not lines:
        raise CodeObjectError("llvm-objdump found no instructions in .text", path=path)
    return lines
