"""Disassembly replayed from earlier llvm-objdump output, for objects that differ a little.

A search disassembles one candidate after another, each K0 with a few
instructions edited, and every llvm-objdump run costs a process (tens of
milliseconds, more on a loaded machine). llvm-objdump's text for one
instruction is a function of its bytes alone (for one tool and one
``--mcpu``/``--mattr``: branch offsets are printed as numbers, symbols only
in the trailing comment, which is not kept), and on GFX9 an instruction's
length is a function of its first dword. So a :class:`Memo` that has seen
objdump's lines of an object with the same ``.text`` layout (address, size,
the addresses of the symbols in it) replays a new object's lines: the bytes
that did not change keep their lines, and the changed stretches are swept
again from the last instruction start before them, every instruction's length
and text looked up from objdump's earlier output. Anything not seen before
(a first dword, an encoding, a layout), a sweep that does not land back on an
old instruction start, or an encoding objdump once printed two ways, and
objdump runs. ``tests/targets/amdgpu/test_sweep.py`` checks replayed lines
against objdump's on corpus candidates.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from asmevo import memo as memos
from asmevo.memo import cached
from asmevo.targets.amdgpu.elf import read_elf

MAX_TEXTS = 200_000       # encodings remembered per tool and target
MAX_BASES = 8             # layouts remembered per tool and target


class Memo:
    """What llvm-objdump printed, per encoding, for one tool and one target."""

    def __init__(self):
        self.texts: dict[bytes, str] = {}
        self.lengths: dict[bytes, int] = {}      # first dword -> instruction bytes
        self.bad: set[bytes] = set()             # printed two ways, or lengths disagree
        self.bases: "OrderedDict[tuple, tuple[bytes, list]]" = OrderedDict()

    def learn(self, data: bytes, lines: list) -> None:
        """Remember objdump's ``lines`` (RawLine) of the object ``data``."""
        layout = _layout(data)
        if layout is None:
            return
        if len(self.texts) > MAX_TEXTS:
            self.texts.clear()
            self.lengths.clear()
        for ln in lines:
            enc, first = ln.encoding, ln.encoding[:4]
            if self.texts.setdefault(enc, ln.text) != ln.text:
                self.bad.add(enc)
            if self.lengths.setdefault(first, len(enc)) != len(enc):
                self.bad.add(first)
        key, text = layout
        ends = [ln.address + len(ln.encoding) for ln in lines]
        if not lines or lines[0].address != key[0] or ends[-1] != key[0] + key[1] or \
                any(e != ln.address for e, ln in zip(ends, lines[1:])):
            return          # objdump skipped or overlapped bytes: no base to replay from
        self.bases[key] = (text, list(lines))
        self.bases.move_to_end(key)
        while len(self.bases) > MAX_BASES:
            self.bases.popitem(last=False)

    def replay(self, data: bytes, raw_line) -> list | None:
        """objdump's lines of ``data``, or None when they cannot be known without it."""
        layout = _layout(data)
        if layout is None:
            return None
        key, text = layout
        base = self.bases.get(key)
        if base is None:
            return None
        old_text, old_lines = base
        if text == old_text:
            return list(old_lines)
        if len(text) != len(old_text):
            return None
        addr, _, symbols = key
        diff = np.flatnonzero(np.frombuffer(text, np.uint8) != np.frombuffer(old_text, np.uint8))
        starts = [ln.address - addr for ln in old_lines]
        index = {s: i for i, s in enumerate(starts)}
        out, i, k = [], 0, 0            # i: next old line to keep; k: next changed byte
        while k < diff.size:
            lo = int(diff[k])
            j = int(np.searchsorted(starts, lo, side="right")) - 1
            if j < 0 or j < i:
                return None
            out.extend(old_lines[i:j])
            p = starts[j]
            while True:
                first = text[p:p + 4]
                n = self.lengths.get(first)
                if n is None or first in self.bad or p + n > len(text):
                    return None
                enc = text[p:p + n]
                t = self.texts.get(enc)
                if t is None or enc in self.bad or any(p < s - addr < p + n for s in symbols):
                    return None
                out.append(raw_line(addr + p, t, enc))
                p += n
                while k < diff.size and diff[k] < p:
                    k += 1
                if p in index and (k >= diff.size or diff[k] >= p):
                    break
                if p >= len(text):
                    return None if k < diff.size else out
            i = index[p]
        out.extend(old_lines[i:])
        return out


@cached("targets.amdgpu.sweep._layout", 16)
def _layout(data: bytes):
    """((.text address, size, symbol addresses in .text), .text bytes), or None (cached:
    an object is looked up, then learned from, and parsing ELF is not free)."""
    try:
        elf = read_elf(data)
    except Exception:   # noqa: BLE001 - objdump (and the caller) will say what is wrong
        return None
    sec = elf.sections.get(".text")
    if sec is None or not sec.size or len(sec.data) != sec.size:
        return None             # absent, empty, or no file bytes behind it (NOBITS, cut)
    symbols = tuple(sorted({s.value for s in elf.symbols if s.section == ".text"}))
    return (sec.addr, sec.size, symbols), bytes(sec.data)


# one per llvm-objdump and --mcpu/--mattr a process uses: a handful
_MEMOS: memos.Memo[Memo] = memos.Memo("amdgpu.sweep.memos", None)


def memo_for(tool_dir: str, mc_args: tuple[str, ...]) -> Memo:
    """The memo of one llvm-objdump and one ``--mcpu``/``--mattr``, in this process."""
    key = (tool_dir, mc_args)
    m = _MEMOS.get(key)
    if m is None:
        m = _MEMOS.put(key, Memo())
    return m
