"""Untrusted instruction lines (from an LLM or a user) into checked, encoded instructions.

Only plain instruction lines pass: no assembler directive (``.incbin``,
``.include``, ``.set``, sections, macros), no label definitions, no second
statement on a line. Each line must then assemble on its own for the target;
the encoder is ``llvm-mc`` run from an argument list with the text on stdin,
so nothing in a line can name a file or reach a shell.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from asmevo.errors import AsmevoError
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.toolchain import Toolchain, ToolchainError, find_toolchain

MAX_LINES = 512
MAX_LINE_LEN = 200
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*$")
_OPERANDS = re.compile(r"^[\w\s\[\]:,.+\-*()|&^~<>@]*$")
_FORBIDDEN = ("incbin", "include", "macro", "rept", "irp", "set", "equ", "section",
              "byte", "long", "quad", "fill", "org", "endm", "ascii", "string")


class UnsafeEdit(AsmevoError):
    """An edit line that is not a plain instruction, with the reason."""


def strip_comment(line: str) -> str:
    for marker in ("//", ";"):
        # ';' separates statements in llvm-mc: treat as a second statement, not a comment
        if marker == "//" and marker in line:
            line = line.split(marker, 1)[0]
    return line.strip()


def check_line(line: str, *, index: int = 0) -> str:
    """One line, comment stripped, if it is shaped like an instruction; else UnsafeEdit."""
    if not isinstance(line, str):
        raise UnsafeEdit(f"line {index}: not text")
    if "\n" in line or "\r" in line or "\0" in line:
        raise UnsafeEdit(f"line {index}: contains a line break or NUL")
    if len(line) > MAX_LINE_LEN:
        raise UnsafeEdit(f"line {index}: longer than {MAX_LINE_LEN} characters")
    text = strip_comment(line)
    if not text:
        raise UnsafeEdit(f"line {index}: empty")
    if text.startswith("."):
        raise UnsafeEdit(f"line {index}: assembler directive {text.split()[0]!r} is not allowed")
    if ";" in text or "#" in text or '"' in text or "'" in text or "\\" in text:
        raise UnsafeEdit(f"line {index}: only one plain instruction per line ({text!r})")
    mnemonic, _, operands = text.partition(" ")
    if mnemonic.endswith(":") or ":" in mnemonic:
        raise UnsafeEdit(f"line {index}: label definitions are not allowed ({mnemonic!r})")
    if not _MNEMONIC.match(mnemonic):
        raise UnsafeEdit(f"line {index}: {mnemonic!r} is not an instruction mnemonic")
    if not _OPERANDS.match(operands):
        raise UnsafeEdit(f"line {index}: unexpected characters in operands {operands!r}")
    if any(re.search(rf"(^|\W)\.{w}\b", operands) for w in _FORBIDDEN):
        raise UnsafeEdit(f"line {index}: directive-like operand in {text!r}")
    return " ".join(text.split())


def check_lines(lines: list[str]) -> list[str]:
    if len(lines) > MAX_LINES:
        raise UnsafeEdit(f"{len(lines)} lines: more than {MAX_LINES}")
    return [check_line(ln, index=i) for i, ln in enumerate(lines)]


@dataclass(frozen=True)
class Encoded:
    text: str
    encoding: bytes


_ENC = re.compile(r";\s*encoding:\s*\[([^\]]*)\]")


def encode_lines(lines: list[str], target: TargetId, *, tc: Toolchain | None = None) -> list[Encoded]:
    """Encode checked instruction lines with ``llvm-mc -show-encoding``.

    A line that does not assemble alone is reported with its index and the
    assembler's message. Branch operands must already be numeric offsets.
    """
    tc = tc or find_toolchain(target.processor)
    checked = check_lines(lines)
    src = "\n".join(checked) + "\n"
    try:
        out = tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", *target.mc_args(), "-show-encoding"],
                     input=src.encode()).stdout.decode()
    except ToolchainError as exc:
        m = re.search(r"<stdin>:(\d+):\d+: error: (.*)", exc.message)
        if m:
            i = int(m.group(1)) - 1
            raise UnsafeEdit(f"line {i} ({checked[i]!r}) does not assemble for "
                             f"{target}: {m.group(2)}") from exc
        raise UnsafeEdit(f"edit does not assemble: {exc.message}") from exc
    encs = [bytes(int(b, 16) for b in m.group(1).split(",") if b.strip())
            for m in _ENC.finditer(out)]
    if len(encs) != len(checked):
        raise UnsafeEdit(f"assembler produced {len(encs)} encodings for {len(checked)} lines")
    return [Encoded(t, e) for t, e in zip(checked, encs)]
