"""Byte-level ELF64 surgery for tests: rename symbols and sections of real code objects.

A new name is appended to a copy of the string table placed at the end of the file
(the section header is repointed), so any name, of any length and any bytes, can be
given to a symbol or section without moving anything else in the file.
"""
from __future__ import annotations

import struct

_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
SHT_SYMTAB, SHT_DYNSYM = 2, 11


def _sections(data: bytes) -> list[list[int]]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3C)
    return [list(_SHDR.unpack_from(data, shoff + i * 64)) for i in range(shnum)]


def _write_section(buf: bytearray, index: int, sh: list[int]) -> None:
    shoff, = struct.unpack_from("<Q", buf, 0x28)
    _SHDR.pack_into(buf, shoff + index * 64, *sh)


def _cstr(data: bytes, off: int) -> bytes:
    return data[off:data.index(b"\0", off)]


def _append_string(buf: bytearray, index: int, new: bytes) -> int:
    """Copy string table ``index`` to the end of ``buf`` with ``new`` added; its offset in it."""
    sh = _sections(bytes(buf))[index]
    table = bytes(buf[sh[4]:sh[4] + sh[5]]) + new + b"\0"
    while len(buf) % 8:
        buf.append(0)
    sh[4], sh[5] = len(buf), len(table)
    buf += table
    _write_section(buf, index, sh)
    return len(table) - len(new) - 1


def section_name(data: bytes, index: int) -> bytes:
    secs = _sections(data)
    shstrndx, = struct.unpack_from("<H", data, 0x3E)
    return _cstr(data, secs[shstrndx][4] + secs[index][0])


def section_index(data: bytes, name: bytes) -> int:
    return next(i for i in range(len(_sections(data))) if section_name(data, i) == name)


def rename_section(data: bytes, old: bytes, new: bytes) -> bytes:
    buf = bytearray(data)
    shstrndx, = struct.unpack_from("<H", data, 0x3E)
    i = section_index(data, old)
    off = _append_string(buf, shstrndx, new)
    sh = _sections(bytes(buf))[i]
    sh[0] = off
    _write_section(buf, i, sh)
    return bytes(buf)


def symbols(data: bytes, table: bytes = b".symtab") -> list[tuple[int, bytes]]:
    """(file offset of the entry, name) of every symbol in ``table``."""
    secs = _sections(data)
    sh = secs[section_index(data, table)]
    strtab = secs[sh[6]]
    out = []
    for off in range(sh[4], sh[4] + sh[5], 24):
        st_name = _SYM.unpack_from(data, off)[0]
        out.append((off, _cstr(data, strtab[4] + st_name)))
    return out


def rename_symbol(data: bytes, old: bytes, new: bytes, table: bytes = b".symtab") -> bytes:
    """Every symbol of ``table`` named ``old`` renamed to ``new``."""
    buf = bytearray(data)
    link = _sections(data)[section_index(data, table)][6]
    hits = [off for off, name in symbols(data, table) if name == old]
    if not hits:
        raise KeyError(old)
    off = _append_string(buf, link, new)
    for entry in hits:
        struct.pack_into("<I", buf, entry, off)
    return bytes(buf)


def retype_symbol(data: bytes, name: bytes, stt: int, table: bytes = b".symtab") -> bytes:
    """Every symbol of ``table`` named ``name`` given symbol type ``stt`` (binding kept)."""
    buf = bytearray(data)
    for off, n in symbols(data, table):
        if n == name:
            buf[off + 4] = (buf[off + 4] & 0xF0) | stt
    return bytes(buf)


SHT_NOTE = 7


def replace_amdgpu_note(data: bytes, desc: bytes) -> bytes:
    """The NT_AMDGPU_METADATA note's descriptor replaced by ``desc`` (the note section
    is rewritten at the end of the file and its header repointed)."""
    buf = bytearray(data)
    secs = _sections(data)
    i = next(k for k, sh in enumerate(secs) if sh[1] == SHT_NOTE)
    sh = secs[i]
    body, out, pos = data[sh[4]:sh[4] + sh[5]], bytearray(), 0
    while pos + 12 <= len(body):
        namesz, descsz, ntype = struct.unpack_from("<III", body, pos)
        name = body[pos + 12:pos + 12 + namesz]
        d0 = pos + 12 + ((namesz + 3) & ~3)
        old = body[d0:d0 + descsz]
        new = desc if (name.rstrip(b"\0") == b"AMDGPU" and ntype == 32) else old
        out += struct.pack("<III", namesz, len(new), ntype) + name.ljust((namesz + 3) & ~3, b"\0")
        out += new.ljust((len(new) + 3) & ~3, b"\0")
        pos = (d0 + descsz + 3) & ~3
    while len(buf) % 8:
        buf.append(0)
    sh[4], sh[5] = len(buf), len(out)
    buf += out
    _write_section(buf, i, sh)
    return bytes(buf)
