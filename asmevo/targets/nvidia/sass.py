"""SASS text from ``nvdisasm``, aligned word by word with the cubin, and control fields.

``nvdisasm -hex -c`` prints each instruction with its two 64-bit halves; every
line is checked against the word :mod:`cubin` read at the same offset, so text
and bytes cannot drift apart.

Control field (Volta..Hopper; sm_90 checked on the corpus, see ``tests/targets/nvidia``):
bits 105-125 of the 128-bit word, i.e. bits 41-61 of the high 64-bit half::

    bits 105-108  stall   cycles before the next instruction may issue (0-15)
    bit  109      yield   1 = no yield hint (CuAssembler prints 'Y' when it is 0)
    bits 110-112  wbar    scoreboard set when the result is written (7 = none)
    bits 113-115  rbar    scoreboard set when the sources have been read (7 = none)
    bits 116-121  wait    mask of scoreboards waited on before issue
    bits 122-125  reuse   operand-reuse cache flags, slots a, b, c, d

Not every (yield, stall) pair encodes: with the yield bit 1, stall 0 and 12-15
are rejected by nvdisasm as undefined values of the "opex" table (seen on LDG,
STG, LDS, STS, LDSM, LDC, S2R, IMAD, BAR, HMMA); :func:`valid_timing` says
which pairs are legal, and every edit is re-disassembled before it is accepted.

Evidence on real cubins (tests/targets/nvidia/test_sass.py): every variable-latency
producer (LDG, LDS, LDC, S2R, SHFL, MUFU...) sets a write scoreboard and the
first reader of its result waits on that scoreboard's bit; fixed-latency ALU
instructions set none; the reuse bits are set exactly where nvdisasm prints
``.reuse`` (slot a = first source).
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from asmevo.memo import Memo, cached
from asmevo.targets.nvidia import tools
from asmevo.targets.nvidia.cubin import WORD_BYTES, Cubin, CubinError

CTRL_SHIFT = 105
NO_BAR = 7


@dataclass(frozen=True)
class Control:
    """The scheduling fields of one instruction word."""

    stall: int
    yield_bit: int
    wbar: int
    rbar: int
    wait: int
    reuse: int

    @staticmethod
    def decode(word: int) -> Control:
        c = word >> CTRL_SHIFT
        return Control(c & 0xF, (c >> 4) & 1, (c >> 5) & 7, (c >> 8) & 7, (c >> 11) & 0x3F,
                       (c >> 17) & 0xF)

    def encode(self, word: int) -> int:
        """``word`` with its control bits replaced by these; every other bit kept."""
        for name, val, bits in (("stall", self.stall, 4), ("yield", self.yield_bit, 1),
                                ("wbar", self.wbar, 3), ("rbar", self.rbar, 3),
                                ("wait", self.wait, 6), ("reuse", self.reuse, 4)):
            if not 0 <= val < (1 << bits):
                raise ValueError(f"control field {name}={val} does not fit {bits} bits")
        c = (self.stall | self.yield_bit << 4 | self.wbar << 5 | self.rbar << 8
             | self.wait << 11 | self.reuse << 17)
        return (word & ~(0x1FFFFF << CTRL_SHIFT)) | (c << CTRL_SHIFT)

    @property
    def sets(self) -> frozenset[int]:
        """Scoreboards this instruction sets (write and read)."""
        return frozenset(b for b in (self.wbar, self.rbar) if b != NO_BAR)

    @property
    def waits(self) -> frozenset[int]:
        return frozenset(i for i in range(6) if self.wait >> i & 1)

    def __str__(self) -> str:
        """CuAssembler's notation, e.g. ``[B0-----:R-:W2:Y:S04]``."""
        wait = "".join(str(i) if self.wait >> i & 1 else "-" for i in range(6))
        r = "-" if self.rbar == NO_BAR else str(self.rbar)
        w = "-" if self.wbar == NO_BAR else str(self.wbar)
        return f"[B{wait}:R{r}:W{w}:{'-' if self.yield_bit else 'Y'}:S{self.stall:02d}]"

    _RE = re.compile(r"\[B([0-5-]{6}):R([0-7-]):W([0-7-]):([Y-]):S(\d\d)\]")

    @staticmethod
    def parse(text: str, reuse: int = 0) -> Control:
        """Inverse of ``str``; reuse flags are not in the notation, so they are given."""
        m = Control._RE.fullmatch(text.strip())
        if not m:
            raise ValueError(f"bad control notation {text!r}; expected e.g. [B0-----:R-:W2:Y:S04]")
        wait = sum(1 << i for i, ch in enumerate(m.group(1)) if ch != "-")
        if any(ch not in ("-", str(i)) for i, ch in enumerate(m.group(1))):
            raise ValueError(f"bad wait mask {m.group(1)!r}: position i holds '-' or digit i")
        stall = int(m.group(5))
        if stall > 15:
            raise ValueError(f"stall {stall} exceeds 15")
        bar = lambda s: NO_BAR if s == "-" else int(s)
        return Control(stall, 0 if m.group(4) == "Y" else 1, bar(m.group(3)), bar(m.group(2)),
                       wait, reuse)

    def with_(self, **kw) -> Control:
        return replace(self, **kw)


def max_stall(yield_bit: int) -> int:
    """Largest stall count that encodes with this yield bit (see the module doc)."""
    return 11 if yield_bit else 15


def valid_timing(stall: int, yield_bit: int) -> bool:
    return 1 <= stall <= max_stall(yield_bit)


@dataclass(frozen=True)
class SassLine:
    """One disassembled instruction: code offset, text (no trailing ';') and its word."""

    offset: int
    text: str
    word: int

    @property
    def control(self) -> Control:
        return Control.decode(self.word)


@dataclass(frozen=True)
class KernelSass:
    name: str
    lines: tuple[SassLine, ...]
    labels: dict[int, str]            # code offset -> label name (.L_x_N)


_INS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_HI = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_SEC = re.compile(r"^\s*\.section\s+(\.text\.[^,\s]+)")
_LABEL = re.compile(r"^(\.L_\w+):\s*$")


def parse_listing(listing: str, *, path: str | None = None) -> dict[str, KernelSass]:
    """Parse ``nvdisasm -hex -c`` output into per-section instruction lists."""
    out: dict[str, KernelSass] = {}
    section: str | None = None
    lines: list[SassLine] = []
    labels: dict[int, str] = {}
    pending_labels: list[str] = []
    pending: tuple[int, str, int] | None = None

    def close() -> None:
        if section is not None:
            name = section[len(".text."):]
            out[name] = KernelSass(name, tuple(lines), dict(labels))

    for raw in listing.splitlines():
        m = _SEC.match(raw)
        if m:
            close()
            section, lines, labels, pending_labels = m.group(1), [], {}, []
            continue
        if pending is not None:
            h = _HI.match(raw)
            if not h:
                raise CubinError(f"nvdisasm line at 0x{pending[0]:x} has no second word",
                                 path=path)
            off, text, lo = pending
            lines.append(SassLine(off, text, lo | int(h.group(1), 16) << 64))
            pending = None
            continue
        m = _LABEL.match(raw.strip())
        if m:
            pending_labels.append(m.group(1))
            continue
        m = _INS.match(raw)
        if m:
            off = int(m.group(1), 16)
            text = m.group(2).rstrip()
            text = text[:-1].rstrip() if text.endswith(";") else text
            for lab in pending_labels:
                labels[off] = lab
            pending_labels = []
            pending = (off, " ".join(text.split()), int(m.group(3), 16))
    close()
    return out


@cached("targets.nvidia.sass._disassemble_bytes", 64)
def _disassemble_bytes(data: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="asmevo_nvdisasm_") as tmp:
        f = Path(tmp) / "k.cubin"
        f.write_bytes(data)
        return tools.run("nvdisasm", ["-hex", "-c", str(f)], what="a cubin")


def disassemble(cubin: Cubin) -> dict[str, KernelSass]:
    """Every kernel's SASS, checked word for word against the cubin's bytes."""
    parsed = parse_listing(_disassemble_bytes(cubin.data), path=cubin.path)
    out = {}
    for k in cubin.kernels:
        ks = parsed.get(k.name)
        if ks is None:
            raise CubinError("nvdisasm printed no code for this kernel", path=cubin.path,
                             kernel=k.name)
        words = k.words
        if len(ks.lines) != len(words):
            raise CubinError(f"nvdisasm printed {len(ks.lines)} instructions, the section "
                             f"holds {len(words)} words", path=cubin.path, kernel=k.name)
        for i, (ln, w) in enumerate(zip(ks.lines, words)):
            if ln.offset != i * WORD_BYTES or ln.word != w:
                raise CubinError("nvdisasm's encoding differs from the section's bytes",
                                 path=cubin.path, kernel=k.name, address=ln.offset)
        out[k.name] = ks
    return out


_WORDS_CACHE: Memo[list[str]] = Memo("nvidia.sass.words", 513)


def disassemble_words(words: list[int], sm: int = 90) -> list[str]:
    """Texts of raw 128-bit words (``nvdisasm --binary SM90``), one per word.

    Cached by the whole word list (nvdisasm costs a fixed fraction of a second per
    call, and the engine builds each candidate twice: identity, then evaluation)."""
    key = (sm, tuple(words))
    hit = _WORDS_CACHE.get(key)
    if hit is None:
        hit = _WORDS_CACHE.put(key, _disassemble_words(words, sm))
    return list(hit)


def _disassemble_words(words: list[int], sm: int) -> list[str]:
    blob = b"".join(w.to_bytes(WORD_BYTES, "little") for w in words)
    with tempfile.TemporaryDirectory(prefix="asmevo_nvdisasm_") as tmp:
        f = Path(tmp) / "words.bin"
        f.write_bytes(blob)
        listing = tools.run("nvdisasm", ["-hex", "--binary", f"SM{sm}", str(f)],
                            what="raw words")
    texts = []
    for raw in listing.splitlines():
        m = _INS.match(raw)
        if m:
            t = m.group(2).rstrip()
            texts.append(" ".join((t.removesuffix(";")).split()))
    return texts
