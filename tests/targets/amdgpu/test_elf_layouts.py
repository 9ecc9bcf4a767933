"""A file that differs from one parsed before only inside ``.text`` is parsed as that
image with the new ``.text`` (elf._Layouts): field for field what a full parse gives,
on every object of the corpus; anything else is parsed in full."""
from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from asmevo.targets.amdgpu import elf

ROOT = Path(__file__).resolve().parents[3]
OBJECTS = sorted(p for p in (ROOT / "experiments").rglob("*")
                 if p.suffix in (".co", ".hsaco") and p.is_file())


def _scrambled(data: bytes, lo: int, hi: int, seed: int, n: int = 24) -> bytes:
    rnd, b = random.Random(seed), bytearray(data)
    for _ in range(n):
        b[rnd.randrange(lo, hi)] = rnd.randrange(256)
    return bytes(b)


def test_the_corpus_has_objects():
    assert len(OBJECTS) > 50


@pytest.mark.parametrize("path", OBJECTS[::3], ids=lambda p: p.parent.name + "/" + p.name)
def test_a_changed_text_gives_the_full_parse(path):
    data = path.read_bytes()
    full = elf._parse(data, None)
    lay = elf._Layouts()
    lay.add(data, full)
    assert lay.kept, "a corpus object's .text overlaps nothing else"
    t = full.sections[".text"]
    other = _scrambled(data, t.offset, t.offset + t.size, len(data))
    assert other != data
    assert lay.image(other) == elf._parse(other, None)
    assert lay.image(data) == full


def test_a_change_outside_text_is_parsed_in_full():
    data = OBJECTS[0].read_bytes()
    full = elf._parse(data, None)
    lay = elf._Layouts()
    lay.add(data, full)
    strtab = full.sections[".strtab"]
    assert lay.image(_scrambled(data, strtab.offset, strtab.offset + strtab.size, 1)) is None
    assert lay.image(data + b"\0") is None


def test_a_section_overlapping_text_keeps_no_layout():
    """A crafted file whose other section lies inside .text would read .text's bytes
    elsewhere in the parse: never taken as a layout."""
    data = bytearray(OBJECTS[0].read_bytes())
    full = elf._parse(bytes(data), None)
    t = full.sections[".text"]
    shoff, = struct.unpack_from("<Q", data, 0x28)
    comment = next(s for s in full.sections.values() if s.type in ("SHT_PROGBITS", "SHT_STRTAB")
                   and s.name not in (".text", "") and s.size <= t.size)
    struct.pack_into("<Q", data, shoff + 64 * comment.index + 0x18, t.offset)
    crafted = bytes(data)
    img = elf._parse(crafted, None)
    assert img.sections[comment.name].data == crafted[t.offset:t.offset + comment.size]
    lay = elf._Layouts()
    lay.add(crafted, img)
    assert not lay.kept


def test_read_elf_through_the_layouts_equals_a_full_parse():
    data = OBJECTS[1].read_bytes()
    elf.read_elf(data)
    t = elf._parse(data, None).sections[".text"]
    other = _scrambled(data, t.offset, t.offset + t.size, 7)
    assert elf.read_elf(other) == elf._parse(other, None)
