"""Rebuilding a candidate without llvm-mc and ld.lld where the result is known exactly.

Most edits of a search keep a layout the tools have already built: two
independent instructions swapped, a wait relaxed, an instruction replaced by
another of the same size, or the same ``s_nop`` padding as an earlier
candidate's with other instructions around it. A *layout* is what the tools'
output depends on besides the bytes of position-independent instructions: the
directives, descriptor and metadata text (register counts included), every
label, every instruction whose encoding depends on where it is (a branch, a label
or symbol operand, raw words) as its line, and between them the byte count of each
run of other instructions (not their order or their sizes one by one: every label
and position-dependent line is at the same address either way). Two assemblies of
one layout give objects that differ only in those runs' bytes, and those bytes are
known: K0's recovery proved that each of its instruction texts assembles to its
encoding (:func:`asmevo.targets.amdgpu.recover.recover`), and an instruction without a
label or symbol operand assembles the same anywhere. So :func:`spliced` takes a
tool build of the candidate's layout (K0's own rebuild, made once per process,
or an earlier candidate's, which :func:`learn` keeps) and writes the differing
instructions' encodings into its ``.text``, when

* every line of the candidate's assembly outside its instructions is the
  layout's (directives, descriptor and metadata, labels),
* every position-dependent instruction is the layout's line at the layout's
  place, and every other one a text with a known encoding, each run of them as
  long as the layout's,
* every function but the last ends where K0's does (function entries stay).

A candidate's tool build teaches its layout, and the encodings of the ``s_nop``
and ``s_waitcnt`` texts K0 lacks (SOPP: always one dword), read from the built
``.text`` where every instruction of a known encoding was found at its place.
Anything else builds with the tools. ``tests/targets/amdgpu/test_splice.py``
compares spliced objects with tool-built ones byte for byte, and
``experiments/bench_splice.py`` does on random edit chains over the corpus.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from asmevo.errors import AsmevoError
from asmevo.memo import Memo
from asmevo.targets.amdgpu.assembly import function_text, to_asm, with_register_counts
from asmevo.targets.amdgpu.elf import read_elf
from asmevo.targets.amdgpu.program import Instruction, Label, Program
from asmevo.targets.amdgpu.recover import recover

_TOKEN = re.compile(r"[A-Za-z_.$][\w.$]*")
MAX_BASES = 4
MAX_LAYOUTS = 16        # tool builds kept per K0 (least recently used go first)
SOPP_LEARNED = ("s_nop", "s_waitcnt")   # texts whose encodings a tool build teaches


@dataclass
class _Layout:
    data: bytes                     # a tool build of this layout (before names are restored)
    text_offset: int                # file offset of .text in ``data``


@dataclass
class _Base:
    head: str                       # K0's .text header lines
    entries: list                   # per function: its entry address (K0's)
    ends: list                      # per function: where it ends in K0
    rest: str                       # everything after .text (descriptors, metadata)
    text_addr: int
    encoding: dict                  # position-independent text -> its encoding
    fixed: dict                     # K0's position-dependent line -> its size
    names: set                      # function and label names (operands naming them)
    layouts: "OrderedDict[tuple, _Layout]"


_BASES: Memo["_Base | None"] = Memo("amdgpu.splice.bases", MAX_BASES, evict="oldest")


def _base_of(program: Program, build, key: tuple) -> _Base | None:
    """K0's :class:`_Base` for the tools ``key`` names, made with ``build`` where there is
    none yet (``build`` None: only one already made)."""
    co = program.source
    bkey = (co.sha256,) + tuple(key)
    if bkey not in _BASES and build is not None:
        return _BASES.put(bkey, _base(co, build))
    return _BASES.get(bkey)


def spliced(program: Program, asm: str, build, key: tuple) -> bytes | None:
    """The bytes ``build(asm)`` would give (before names are restored), or None when
    they are not known without running the tools. ``build``: the tool build of an
    assembly text (used once, for K0's own rebuild); ``key``: what that build
    depends on besides the text (tool version, target, section starts)."""
    base = _base_of(program, build, key)
    if base is None:
        return None
    parts = _split(program, asm)
    sizes = _layout_key(program, parts, base) if parts is not None else None
    lay_key = _coarse(sizes) if sizes is not None else None
    layout = base.layouts.get(lay_key) if lay_key is not None else None
    if layout is None:
        return None
    base.layouts.move_to_end(lay_key)
    out = bytearray(layout.data)
    # every position-independent instruction written where its run puts it; labels and
    # position-dependent lines sit where the layout's build has them, as they are
    for fn, (_, items), entry in zip(program.functions, sizes[2], base.entries):
        pos = layout.text_offset + entry - base.text_addr
        for it, size in zip(fn.items, items):
            if isinstance(size, int):
                out[pos:pos + size] = base.encoding[it.text]
            pos += _size(size)
    return bytes(out)


def learn(program: Program, asm: str, data: bytes, key: tuple) -> None:
    """Keep the tool build ``data`` of ``asm`` (``program`` printed) as its layout's, and
    the encodings it teaches, for later candidates of that layout (see the module's
    docstring); nothing where the build is not what the layout and the known encodings
    say it must be."""
    base = _base_of(program, None, key)
    parts = _split(program, asm) if base is not None else None
    if parts is None:
        return
    taught = {it.text for fn in program.functions for it in fn.items
              if isinstance(it, Instruction) and not it.raw and it.text not in base.encoding
              and it.mnemonic in SOPP_LEARNED and _movable(it, base.names)}
    lay_key = _layout_key(program, parts, base, {t: 4 for t in taught})
    if lay_key is None or not taught and _coarse(lay_key) in base.layouts:
        return
    try:
        text = read_elf(data).sections.get(".text")
    except AsmevoError:     # a build we cannot read teaches nothing
        return
    if text is None or text.addr != base.text_addr:
        return
    got: dict[str, bytes] = {}
    for fn, items, entry in zip(program.functions, lay_key[2], base.entries):
        pos = entry
        for it, size in zip(fn.items, items[1]):
            if isinstance(size, int):
                at = bytes(text.data[pos - text.addr:pos - text.addr + size]) \
                    if pos >= text.addr else b""
                if len(at) != size:
                    return
                if it.text in taught:
                    if (int.from_bytes(at, "little") >> 23) != 0x17F or \
                            got.setdefault(it.text, at) != at:
                        return      # not a SOPP word, or two encodings of one text
                elif at != base.encoding[it.text]:
                    return          # an instruction is not where the layout puts it
            pos += _size(size)
    base.encoding.update(got)
    base.layouts.setdefault(_coarse(lay_key), _Layout(data, text.offset))
    while len(base.layouts) > MAX_LAYOUTS:
        base.layouts.popitem(last=False)


def _size(item) -> int:
    """The byte size a layout key's item stands for (a label's line: none)."""
    return item if isinstance(item, int) else item[1] if isinstance(item, tuple) else 0


def _coarse(key: tuple) -> tuple:
    """A layout: :func:`_layout_key`'s key with each run of position-independent
    instructions (their sizes, consecutive) as the run's byte count. Two programs of one
    layout put every label and position-dependent line at the same address, and differ
    only in the bytes between them."""
    head, rest, fns = key
    out = []
    for header, items in fns:
        coarse, run = [], 0
        for it in items:
            if isinstance(it, int):
                run += it
                continue
            if run:
                coarse.append(run)
                run = 0
            coarse.append(it)
        if run:
            coarse.append(run)
        out.append((header, tuple(coarse)))
    return head, rest, tuple(out)


def _movable(it: Instruction, names: set) -> bool:
    """Whether the instruction assembles the same anywhere: no branch, no label or
    symbol operand."""
    return not (it.is_branch or "@" in it.text or
                any(t in names for t in _TOKEN.findall(it.operands)))


def _layout_key(program: Program, parts, base: _Base, assumed: dict | None = None):
    """``(head, rest, per function (header, items))`` where an item is a label's line, a
    position-dependent instruction's ``(line, size)`` or another instruction's size; None
    where a size is not known or a function but the last would end elsewhere than in K0."""
    head, fns, rest = parts
    if len(fns) != len(base.entries):
        return None
    out = []
    for n, ((h, lines), fn) in enumerate(zip(fns, program.functions)):
        items, pos = [], base.entries[n]
        for line, it in zip(lines, fn.items):
            if isinstance(it, Label):
                items.append(line)
                continue
            enc = None if it.raw else base.encoding.get(it.text)
            if enc is not None:
                size = len(enc)
                items.append(size)
            elif assumed and it.text in assumed and not it.raw:
                size = assumed[it.text]
                items.append(size)
            else:
                size = base.fixed.get(line)
                if size is None:
                    return None
                items.append((line, size))
            pos += size
        if n < len(fns) - 1 and pos != base.ends[n]:
            return None
        out.append((tuple(h), tuple(items)))
    return head, rest, tuple(out)


def _split(program: Program, asm: str):
    """(.text header, per function (header lines, item lines), rest) of ``asm``."""
    co = program.source
    fns = []
    for fn in program.functions:
        lines = function_text(fn, co.path)
        nh = len(lines) - len(fn.items)
        fns.append((lines[:nh], lines[nh:]))
    text = sum((h + i for h, i in fns), [])
    body = "\n".join(text)
    at = asm.find(body + "\n.rodata") if body else -1
    if at < 0:
        return None
    return asm[:at], fns, asm[at + len(body):]


def _base(co, build) -> _Base | None:
    """K0's layout (its rebuild by ``build``) and what it proves: the encodings of its
    position-independent texts, the sizes of its position-dependent lines."""
    p0 = recover(co)
    asm0 = to_asm(with_register_counts(p0))
    parts = _split(p0, asm0)
    if parts is None:
        return None
    head, fns, rest = parts
    data = build(asm0)
    text = read_elf(data).sections.get(".text")
    if text is None or text.addr != co.text.addr or bytes(text.data) != bytes(co.text.data):
        return None
    names = {f.name for f in p0.functions} | {lb for f in p0.functions for lb in f.labels}
    items = [(i, line) for f, (_, lines) in zip(p0.functions, fns)
             for i, line in zip(f.items, lines)
             if isinstance(i, Instruction) and i.encoding is not None]
    enc: dict[str, bytes] = {}
    bad = set()
    for i, _ in items:
        if not i.raw and _movable(i, names) and enc.setdefault(i.text, i.encoding) != i.encoding:
            bad.add(i.text)
    for t in bad:       # one text, two encodings in K0: position-dependent after all
        del enc[t]
    sizes: dict[str, set] = {}      # every other line: its size, where it has one only
    for i, line in items:
        if i.raw or i.text not in enc:
            sizes.setdefault(line, set()).add(len(i.encoding))
    fixed = {line: n.pop() for line, n in sizes.items() if len(n) == 1}
    ends = [f.entry + sum(len(i.encoding) for i in f.instructions if i.encoding is not None)
            for f in p0.functions]
    base = _Base(head, [f.entry for f in p0.functions], ends, rest, text.addr, enc, fixed,
                 names, OrderedDict())
    key0 = _layout_key(p0, parts, base)
    if key0 is None:
        return None
    base.layouts[_coarse(key0)] = _Layout(data, text.offset)
    return base
