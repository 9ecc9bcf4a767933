"""Symbol names from a code object, made safe to print into assembly.

A symbol name is untrusted bytes: a label called ``x\\n.include "/etc/passwd"``
printed into a ``.s`` is a second statement that makes llvm-mc read a local
file, and quoting does not help (llvm-mc keeps a quoted name's backslashes
verbatim, so a quoted name cannot carry arbitrary bytes either). So every name
printed into assembly must match the assembler's identifier grammar
(:data:`IDENTIFIER`) and :func:`to_asm` refuses any other.

A label or local function whose name does not match (or that looks like a
register, repeats another name, or is assembler-local) is printed under a placeholder of the same
byte length, and :func:`restore` writes the original bytes back into the linked
object's ``.strtab``: the rebuild's symbol table carries K0's names again, and
nothing moved, since the lengths are equal. A kernel name cannot be handled that
way (it is hashed into ``.hash``/``.gnu.hash``, which order ``.dynsym``), so an
unprintable kernel name is refused with one line.
"""
from __future__ import annotations

import re
import struct

from asmevo.targets.amdgpu.elf import CodeObjectError

# What llvm-mc lexes as one identifier token: no '$' first (that is a PC
# reference), no '@' (symbol variants), ASCII only.
IDENTIFIER = re.compile(r"[A-Za-z_.][A-Za-z0-9_.$]*\Z", re.ASCII)
# Operand words an AMDGPU branch operand would be parsed as instead of a label.
_OPERAND_WORD = re.compile(
    r"(?:[sva]|ttmp|acc)\d+|(?:vcc|exec|flat_scratch|xnack_mask|tba|tma)(?:_lo|_hi)?|m0|scc|"
    r"vccz|execz|off|null|lds_direct|src_\w+|(?:shared|private)_(?:base|limit)|"
    r"pops_exiting_wave_id", re.ASCII | re.IGNORECASE)
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def name_bytes(name: str) -> bytes:
    """The bytes of a symbol name (``elf.py`` decodes them with surrogate escapes)."""
    return name.encode("utf-8", "surrogateescape")


def printable(name: str) -> bool:
    """Whether ``name`` can be printed into assembly as it is (one identifier token)."""
    return bool(IDENTIFIER.match(name)) and not (name[0] == "." and name[1:2].isdigit()) \
        and name != "."


def shown(name: str, limit: int = 60) -> str:
    """``name`` for a one-line message: escaped, and cut when long."""
    r = repr(name if len(name) <= limit else name[:limit])
    return r + (f"... ({len(name)} bytes)" if len(name) > limit else "")


def require_printable(name: str, *, what: str, path: str | None = None) -> str:
    """``name`` if it is :func:`printable`, else a CodeObjectError naming it."""
    if not printable(name):
        raise CodeObjectError(f"{what} name {shown(name)} is not an assembler identifier "
                              "([A-Za-z_.][A-Za-z0-9_.$]*); asmevo cannot rebuild it",
                              path=path)
    return name


def _placeholder(n: int, avoid: set[str]) -> str | None:
    """A fresh printable name of exactly ``n`` characters, not assembler-local."""
    prefix = "_"
    if n == 1:
        pool = (c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
    else:
        def pool():
            i = 0
            while True:
                body, k = "", i
                while True:
                    body = _ALNUM[k % 36] + body
                    k //= 36
                    if not k:
                        break
                if len(prefix) + len(body) > n:
                    return
                yield (prefix + body).ljust(n, "_")
                i += 1
        pool = pool()
    for cand in pool:
        if cand not in avoid and not _OPERAND_WORD.fullmatch(cand):
            return cand
    return None


class Namer:
    """Assigns the names a Program prints; ``renamed`` maps placeholder -> original."""

    def __init__(self, taken: set[str], path: str | None = None):
        self.avoid = set(taken)          # every name K0 has: placeholders must not hit one
        self.emitted: set[str] = set()
        self.renamed: dict[str, str] = {}
        self.path = path

    def kernel(self, name: str) -> str:
        require_printable(name, what="kernel", path=self.path)
        self.emitted.add(name)
        return name

    def local(self, name: str) -> str:
        """``name``, or a same-length placeholder when it cannot be printed as it is.

        K0 names starting with ``.L`` get one too: printed as they are, the
        assembler would keep them out of the symbol table that K0 has them in.
        """
        if (printable(name) and not name.startswith(".L") and not _OPERAND_WORD.fullmatch(name)
                and name not in self.emitted):
            self.emitted.add(name)
            return name
        p = _placeholder(len(name_bytes(name)), self.avoid | self.emitted)
        if p is None:
            raise CodeObjectError(f"symbol name {shown(name)} is not an assembler identifier "
                                  "and no placeholder of its length is free", path=self.path)
        self.emitted.add(p)
        self.renamed[p] = name
        return p

    def fresh(self, base: str) -> str:
        """``base``, or ``base_N``: a generated label that no K0 name repeats."""
        name, i = base, 0
        while name in self.avoid or name in self.emitted:
            i += 1
            name = f"{base}_{i}"
        self.emitted.add(name)
        return name


# -- restoring the originals in a linked object ------------------------------------

_SHDR = struct.Struct("<IIQQQQIIQQ")
SHT_SYMTAB = 2


def _symbol_names(data: bytes) -> list[tuple[int, int, bytes]]:
    """(strtab file offset of the name, symbol index, name) of every .symtab entry."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3C)
    secs = [_SHDR.unpack_from(data, shoff + i * 64) for i in range(shnum)]
    out = []
    for sh in secs:
        if sh[1] != SHT_SYMTAB:
            continue
        strtab = secs[sh[6]]
        for i, off in enumerate(range(sh[4], sh[4] + sh[5], 24)):
            at = strtab[4] + struct.unpack_from("<I", data, off)[0]
            out.append((at, i, data[at:data.index(b"\0", at)]))
    return out


def restore(data: bytes, renamed: dict[str, str]) -> bytes:
    """The linked object ``data`` with every placeholder in its symbol table spelled
    as the original name again (same length, so nothing moves)."""
    if not renamed:
        return data
    back = {p.encode("ascii"): name_bytes(o) for p, o in renamed.items()}
    before = _symbol_names(data)
    buf = bytearray(data)
    for at, _, name in before:
        if name in back:
            buf[at:at + len(name)] = back[name]
    out = bytes(buf)
    after = _symbol_names(out)
    for (_, i, old), (_, _, new) in zip(before, after):
        if new != back.get(old, old):
            raise CodeObjectError(f"cannot restore symbol {i}'s name in the rebuild: the "
                                  "linker shares its string with another symbol")
    return out
