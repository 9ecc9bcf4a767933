"""Untrusted instruction lines (from an LLM or a user) into checked, encoded instructions.

Only plain, printable-ASCII instruction lines pass: no assembler directive
(``.incbin``, ``.include``, ``.set``, sections, macros), no label definitions
(except, where the caller allows them, the generated ``.Lae_<hex>:`` labels of
:data:`asmevo.edits.GENERATED_LABEL` that structural rule edits need; the LLM
path never allows them), no second statement on a line, and no privileged instruction the replaced
window did not already hold (:data:`PRIVILEGED`). Each line must then
assemble on its own for the target; the encoder is ``llvm-mc`` run from an
argument list with the text on stdin, so nothing in a line can name a file or
reach a shell.
"""
from __future__ import annotations


import re
from collections import Counter
from dataclasses import dataclass

from asmevo.edits import label_of
from asmevo.memo import cached
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.toolchain import Toolchain, ToolchainError, find_toolchain

MAX_LINES = 512
MAX_LINE_LEN = 200
# ASCII only: Python's \w and \s match any Unicode letter or space, and one Cyrillic
# letter in an operand (`s_mov_b32 s0, \u0455`) made llvm-mc 19 spin for two minutes.
_MNEMONIC = re.compile(r"[a-z][a-z0-9_]*\Z", re.ASCII)
_OPERANDS = re.compile(r"[A-Za-z0-9_ \t\[\]:,.+\-*()|&^~<>@]*\Z", re.ASCII)
_FORBIDDEN = ("incbin", "include", "macro", "rept", "irp", "set", "equ", "section",
              "byte", "long", "quad", "fill", "org", "endm", "ascii", "string")
_DIRECTIVE_WORD = re.compile(r"(?:^|[^A-Za-z0-9_])\.(?:" + "|".join(_FORBIDDEN)
                             + r")(?![A-Za-z0-9_])", re.ASCII)

# Instructions an edit may not introduce (one list, for every edit path: rules, LLM,
# replayed archives). They leave the kernel's control flow, halt, kill or signal the
# wave, write hardware registers or drive caches; the emulator, the judge, does not
# model what they do (s_sethalt and s_dcache_wb run as no-ops there), so a candidate
# that adds one could be judged equal and be wrong. An edit may keep or move K0's own
# (the same instruction text, from the window it replaces).
PRIVILEGED = frozenset({
    "s_setpc_b64", "s_swappc_b64", "s_getpc_b64", "s_rfe_b64", "s_trap", "s_sethalt",
    "s_setkill", "s_endpgm_saved", "s_cbranch_join", "s_cbranch_g_fork", "s_cbranch_i_fork",
    "s_setvskip", "s_ttracedata", "s_ttracedata_imm", "buffer_wbl2", "buffer_inv",
})
PRIVILEGED_PREFIXES = ("s_sendmsg", "s_setreg_", "s_dcache_", "s_icache_", "buffer_wbinvl1",
                       "s_cbranch_cdbg")


def privileged(mnemonic: str) -> bool:
    """Whether ``mnemonic`` is one an edit may not introduce (:data:`PRIVILEGED`)."""
    return mnemonic in PRIVILEGED or mnemonic.startswith(PRIVILEGED_PREFIXES)


class UnsafeEdit(Refused):
    """An edit line that is not a plain instruction, with the reason."""

    status = "unsafe"

    @property
    def reason(self) -> str:
        return self.message


def strip_comment(line: str) -> str:
    for marker in ("//", ";"):
        # ';' separates statements in llvm-mc: treat as a second statement, not a comment
        if marker == "//" and marker in line:
            line = line.split(marker, 1)[0]
    return line.strip()


def check_line(line: str, *, index: int = 0, labels: bool = False) -> str:
    """One line, comment stripped, if it is shaped like an instruction (or, with
    ``labels``, is exactly a generated label definition); else UnsafeEdit."""
    if not isinstance(line, str):
        raise UnsafeEdit(f"line {index}: not text")
    if "\n" in line or "\r" in line or "\0" in line:
        raise UnsafeEdit(f"line {index}: contains a line break or NUL")
    if len(line) > MAX_LINE_LEN:
        raise UnsafeEdit(f"line {index}: longer than {MAX_LINE_LEN} characters")
    odd = next((c for c in line if not (" " <= c <= "~" or c == "\t")), None)
    if odd is not None:
        raise UnsafeEdit(f"line {index}: character U+{ord(odd):04X} is not printable ASCII "
                         "(edits are ASCII only)")
    text = strip_comment(line)
    if not text:
        raise UnsafeEdit(f"line {index}: empty")
    if labels and label_of(text) is not None and text == line.strip():
        return text
    if text.startswith("."):
        raise UnsafeEdit(f"line {index}: assembler directive {text.split()[0]!r} is not allowed")
    if ";" in text or "#" in text or '"' in text or "'" in text or "\\" in text:
        raise UnsafeEdit(f"line {index}: only one plain instruction per line ({text!r})")
    mnemonic, operands = (text.split(None, 1) + [""])[:2]
    if mnemonic.endswith(":") or ":" in mnemonic:
        raise UnsafeEdit(f"line {index}: label definitions are not allowed ({mnemonic!r})")
    if not _MNEMONIC.match(mnemonic):
        raise UnsafeEdit(f"line {index}: {mnemonic!r} is not an instruction mnemonic")
    if not _OPERANDS.match(operands):
        raise UnsafeEdit(f"line {index}: unexpected characters in operands {operands!r}")
    if _DIRECTIVE_WORD.search(operands):
        raise UnsafeEdit(f"line {index}: directive-like operand in {text!r}")
    return " ".join(text.split())


@cached("targets.amdgpu.sanitize.instruction_shaped", 1 << 16)
def instruction_shaped(text: str) -> bool:
    """Whether ``text`` passes :func:`check_line` (the printer's last check). Memoized:
    a pure function of the text, asked for every line of every candidate printed."""
    try:
        check_line(text)
        return True
    except UnsafeEdit:
        return False


def check_introduced(lines: list[str], window: list[str]) -> None:
    """UnsafeEdit if checked ``lines`` hold a :func:`privileged` instruction that the
    replaced ``window`` (instruction texts) does not: K0's own may move, none may be added."""
    have = Counter(" ".join(t.split()) for t in window
                   if t.strip() and privileged(t.split(None, 1)[0]))
    for i, text in enumerate(lines):
        mnemonic = text.split(None, 1)[0] if text else ""
        if not privileged(mnemonic):
            continue
        if have[text] <= 0:
            raise UnsafeEdit(f"line {i}: {mnemonic} is not allowed in an edit (it changes "
                             "machine state the emulator does not model; only the window's "
                             "own may be kept)")
        have[text] -= 1


def check_lines(lines: list[str], *, labels: bool = False) -> list[str]:
    """Every line checked (:func:`check_line`); ``labels`` admits generated labels."""
    if len(lines) > MAX_LINES:
        raise UnsafeEdit(f"{len(lines)} lines: more than {MAX_LINES}")
    return [check_line(ln, index=i, labels=labels) for i, ln in enumerate(lines)]


@dataclass(frozen=True)
class Encoded:
    """One line's bytes. ``fixups`` names what the assembler could not resolve on the
    line alone (a symbol, an expression over one, a branch label): it leaves those
    bytes to the linker, so here they are 0 and not the line's encoding."""

    text: str
    encoding: bytes
    fixups: tuple[str, ...] = ()


_ENC = re.compile(r";\s*encoding:\s*\[([^\]]*)\]")
_FIXUP = re.compile(r"^\s*;\s*fixup [A-Z] - offset: \d+, value: (.*), kind: \S+\s*$")
_BYTE = re.compile(r"0x[0-9a-fA-F]{1,2}\Z")


def _encodings(listing: str) -> list[tuple[bytes, tuple[str, ...]]]:
    """(bytes, fixup values) per encoded line of ``llvm-mc -show-encoding`` output. A
    fixup's placeholder bytes (``A``, ``B``, ...) are 0: never read as hex digits."""
    out: list[tuple[bytes, list[str]]] = []
    for line in listing.splitlines():
        m = _ENC.search(line)
        if m:
            tokens = [t.strip() for t in m.group(1).split(",") if t.strip()]
            out.append((bytes(int(t, 16) if _BYTE.match(t) else 0 for t in tokens), []))
            continue
        f = _FIXUP.match(line)
        if f and out:
            out[-1][1].append(f.group(1).strip())
    return [(b, tuple(f)) for b, f in out]


def encode_lines(lines: list[str], target: TargetId, *, tc: Toolchain | None = None) -> list[Encoded]:
    """Encode checked instruction lines with ``llvm-mc -show-encoding``, each alone.

    A line that does not assemble alone is reported with its index and the
    assembler's message. A line whose operand is a symbol or an expression over one
    comes back with its ``fixups``: the caller that wants bytes must refuse it.
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
    encs = _encodings(out)
    if len(encs) != len(checked):
        raise UnsafeEdit(f"assembler produced {len(encs)} encodings for {len(checked)} lines")
    return [Encoded(t, e, f) for t, (e, f) in zip(checked, encs)]
