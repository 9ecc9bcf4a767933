"""A deterministic corpus of corrupt code objects, generated from committed ones.

Each variant damages one structure a loader trusts: truncations at structural
boundaries and at random points, bit flips and extreme values in the ELF header,
in the section header table, in the symbol table, in kernel descriptors, in the
metadata note's header and in its msgpack payload (huge counts, wrong types, deep
nesting); wrong e_machine, 32-bit and big-endian headers; foreign ELFs (an x86
object, an NVIDIA cubin); an empty file. :func:`variants` yields ``(name, bytes)``
in a fixed order for a fixed seed.
"""
from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path

import msgpack

from tests.conftest import KERNELS
from tests.targets.amdgpu.elfedit import _sections, replace_amdgpu_note, section_name, symbols

BASES = (KERNELS / "asm_copy" / "asm_copy.gfx942.co",          # hand-written, labels
         KERNELS / "vector_add" / "vector_ops.gfx942.co",       # HIP, several kernels
         KERNELS / "softmax" / "softmax.gfx90a.co",             # gfx90a
         KERNELS / "tri_add" / "tri_add.gfx942.co")             # Triton
CUBIN = KERNELS / "tri_add" / "tri_add.sm_90.cubin"
# ELF64 header fields: (name, offset, struct format)
HEADER = (("e_type", 16, "<H"), ("e_machine", 18, "<H"), ("e_version", 20, "<I"),
          ("e_entry", 24, "<Q"), ("e_phoff", 32, "<Q"), ("e_shoff", 40, "<Q"),
          ("e_flags", 48, "<I"), ("e_ehsize", 52, "<H"), ("e_phentsize", 54, "<H"),
          ("e_phnum", 56, "<H"), ("e_shentsize", 58, "<H"), ("e_shnum", 60, "<H"),
          ("e_shstrndx", 62, "<H"))
# section header fields: (name, offset in the 64-byte entry, format)
SHDR = (("sh_name", 0, "<I"), ("sh_type", 4, "<I"), ("sh_offset", 24, "<Q"),
        ("sh_size", 32, "<Q"), ("sh_link", 40, "<I"), ("sh_entsize", 56, "<Q"))


def _put(data: bytes, off: int, fmt: str, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, off, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
    return bytes(buf)


def _flip(data: bytes, rng: random.Random, lo: int, hi: int, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        i = rng.randrange(lo, hi)
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _extremes(size: int, file_len: int) -> tuple[int, ...]:
    top = (1 << (8 * size)) - 1
    return tuple(sorted({0, top, min(file_len, top)}))


def _header(tag: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    for name, off, fmt in HEADER:
        for v in _extremes(struct.calcsize(fmt), len(data)):
            yield f"{tag}:{name}={v:#x}", _put(data, off, fmt, v)
    for machine in (3, 62, 183, 190):
        yield f"{tag}:e_machine={machine}", _put(data, 18, "<H", machine)
    for mach in (0x00, 0x2C, 0x41, 0xFF):
        yield f"{tag}:mach={mach:#x}", _put(data, 48, "<I", (struct.unpack_from("<I", data, 48)[0]
                                                          & ~0xFF) | mach)
    for i, v in ((4, 1), (5, 2), (6, 0), (7, 0), (8, 9)):     # 32-bit, big-endian, version, ABI
        yield f"{tag}:ident[{i}]={v}", data[:i] + bytes([v]) + data[i + 1:]


def _section_table(tag: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """One field of each section header set to an extreme; the type of three changed."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    for i in range(1, len(_sections(data))):
        sec = section_name(data, i).decode(errors="replace")
        base = shoff + 64 * i
        name, off, fmt = rng.choice(SHDR)
        v = rng.choice((0, 1 << 31, (1 << (8 * struct.calcsize(fmt))) - 1, len(data)))
        yield f"{tag}:{sec}.{name}={v:#x}", _put(data, base + off, fmt, v)
        if sec in (".text", ".note", ".symtab"):
            t = rng.choice((1, 8, 11))     # PROGBITS, NOBITS, DYNSYM
            yield f"{tag}:{sec}.sh_type={t}", _put(data, base + 4, "<I", t)


def _symbol_table(tag: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    fields = (("st_name", 0, "<I", (0xFFFFFFFF, 1 << 20)), ("st_info", 4, "<B", (0x12, 0x1A, 0xFF)),
              ("st_shndx", 6, "<H", (0, 0xFFF1, 0xFFFF, 99)),
              ("st_value", 8, "<Q", (0, 1 << 63, (1 << 64) - 1)),
              ("st_size", 16, "<Q", (0, (1 << 64) - 1)))
    for k, (off, name) in enumerate(symbols(data)):
        sym = name.decode(errors="replace") or f"#{k}"
        field, at, fmt, values = rng.choice(fields)
        v = rng.choice(values)
        yield f"{tag}:{sym}.{field}={v:#x}", _put(data, off + at, fmt, v)


def _descriptors(tag: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    from asmevo.targets.amdgpu import load
    k = load(data).kernels[0]
    co = load(data)
    sec = next(s for s in co.sections.values() if s.addr <= k.kd_address < s.addr + s.size)
    kd = sec.offset + k.kd_address - sec.addr
    for v in (0, -k.kd_address, 2, 1 << 40, -(1 << 63)):
        yield f"{tag}:{k.name}.kd.entry={v}", _put(data, kd + 16, "<Q", v)
    for word in sorted(rng.sample(range(16), 5)):
        yield f"{tag}:{k.name}.kd.word{word}=~0", _put(data, kd + 4 * word, "<I", 0xFFFFFFFF)
    for n in range(3):
        yield f"{tag}:{k.name}.kd.flip{n}", _flip(data, rng, kd, kd + 64, 1 + n * 3)


def _note(tag: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    secs = _sections(data)
    sh = next(s for s in secs if s[1] == 7)
    off = sh[4]
    for field, at in (("namesz", 0), ("descsz", 4), ("type", 8)):
        for v in (0, 3, 0x7FFFFFFF, 0xFFFFFFFF):
            yield f"{tag}:note.{field}={v:#x}", _put(data, off + at, "<I", v)
    yield f"{tag}:note.name", data[:off + 12] + b"AMDGPX" + data[off + 18:]
    for n in range(3):
        yield f"{tag}:note.flip{n}", _flip(data, rng, off, off + sh[5], 1 + 8 * n)


def _msgpack(tag: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    from asmevo.targets.amdgpu import load
    doc = load(data).metadata
    k0 = doc["amdhsa.kernels"][0]
    bad_docs = {
        "not_a_map": [1, 2, 3],
        "kernels_not_list": dict(doc, **{"amdhsa.kernels": "x"}),
        "kernels_of_ints": dict(doc, **{"amdhsa.kernels": [1, 2]}),
        "no_symbol": dict(doc, **{"amdhsa.kernels": [{k: v for k, v in k0.items()
                                                       if k != ".symbol"}]}),
        "sizes_as_strings": dict(doc, **{"amdhsa.kernels": [dict(k0, **{
            ".kernarg_segment_size": "64", ".sgpr_count": None})]}),
        "args_of_strings": dict(doc, **{"amdhsa.kernels": [dict(k0, **{".args": ["a", "b"]})]}),
        "negative_offsets": dict(doc, **{"amdhsa.kernels": [dict(k0, **{".args": [
            {".offset": -8, ".size": 1 << 62, ".value_kind": "global_buffer"}]})]}),
        "float_values": dict(doc, **{"amdhsa.kernels": [dict(k0, **{".wavefront_size": 64.5})]}),
        "bytes_value": dict(doc, **{"amdhsa.target": b"\x00\xff"}),
        "int_keys": {1: 2, "amdhsa.kernels": []},
        "many_kernels": dict(doc, **{"amdhsa.kernels": [k0] * 5000}),
    }
    for name, bad in bad_docs.items():
        yield f"{tag}:msgpack.{name}", replace_amdgpu_note(data, msgpack.packb(bad))
    for depth in (900, 5000, 100_000):
        yield f"{tag}:msgpack.deep{depth}", replace_amdgpu_note(data, _deep(doc, depth))
    for name, raw in (("array32_huge", b"\xdd\xff\xff\xff\xff"),
                      ("map32_huge", b"\xdf\xff\xff\xff\xff"),
                      ("str32_huge", b"\xdb\xff\xff\xff\xff abc"),
                      ("never_used_byte", b"\xc1"),
                      ("trailing_garbage", msgpack.packb(doc) + b"\x00\xff"),
                      ("empty", b"")):
        yield f"{tag}:msgpack.{name}", replace_amdgpu_note(data, raw)


def _deep(doc: dict, depth: int) -> bytes:
    """``doc`` plus a key holding ``depth`` nested one-element arrays (raw msgpack:
    the packer itself refuses such depth)."""
    pk = msgpack.packb
    body = b"".join(pk(k) + pk(v) for k, v in doc.items())
    return (b"\xde" + struct.pack(">H", len(doc) + 1) + body + pk("deep")
            + b"\x91" * depth + b"\x90")


def _truncations(tag: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    cuts = {0, 1, 4, 16, 63, 64, shoff, shoff + 64, shoff + 100, len(data) - 1}
    cuts |= {s[4] + s[5] // 2 for s in _sections(data)[1:] if s[5]}
    cuts |= {rng.randrange(len(data)) for _ in range(4)}
    for c in sorted(x for x in cuts if 0 <= x < len(data)):
        yield f"{tag}:truncate@{c}", data[:c]


def foreign(tmp: Path | None = None) -> Iterator[tuple[str, bytes]]:
    """Files that are not AMDGPU code objects at all."""
    yield "empty", b""
    yield "text", b"hello world\n" * 20
    yield "elf_magic_only", b"\x7fELF"
    yield "cubin", CUBIN.read_bytes()
    yield "x86_object", _x86_object()


def _x86_object() -> bytes:
    """A minimal relocatable x86-64 ELF: header, one NULL and one .shstrtab section."""
    shstr = b"\0.shstrtab\0"
    shoff = 64 + len(shstr) + (-(64 + len(shstr)) % 8)
    hdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    hdr += struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 2, 1)
    body = hdr + shstr + bytes(shoff - 64 - len(shstr))
    null = bytes(64)
    strsec = struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(shstr), 0, 0, 1, 0)
    return body + null + strsec


def variants(seed: int = 2024) -> Iterator[tuple[str, bytes]]:
    """Every variant, in a fixed order (about 400)."""
    rng = random.Random(seed)
    yield from foreign()
    for i, base in enumerate(BASES):
        data = base.read_bytes()
        tag = base.stem
        yield from _truncations(tag, data, rng)
        if i in (0, 2):
            yield from _header(tag, data)
        yield from _section_table(tag, data, rng)
        yield from _symbol_table(tag, data, rng)
        yield from _descriptors(tag, data, rng)
        yield from _note(tag, data, rng)
        if i in (0, 1):
            yield from _msgpack(tag, data)
        for n in range(3):
            yield f"{tag}:flips{n}", _flip(data, rng, 0, len(data), 1 << (2 * n))
