"""The ELF container of an AMDGPU code object: header, sections, symbols, notes.

Everything here is about the file format only; what the kernels mean lives in
``codeobject.py``. All pyelftools calls are wrapped so a corrupt file becomes
one :class:`CodeObjectError` naming the file and what is wrong.
"""
from __future__ import annotations


import io
import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from asmevo.memo import cached
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.errors import AmdgpuError

EM_AMDGPU = 224
EM_CUDA = 190
EM_X86_64 = 62
ELFOSABI_AMDGPU_HSA = 64
# EI_ABIVERSION -> code object version
ABI_TO_COV = {2: 4, 3: 5, 4: 6}

# e_flags: EF_AMDGPU_MACH (bits 0-7) -> processor name, for the processors asmevo loads
MACH = P.MACH
OTHER_MACH = P.OTHER_MACH
SUPPORTED = ", ".join(MACH.values())
_FEATURE = {0: "unsupported", 1: "any", 2: "off", 3: "on"}


class CodeObjectError(AmdgpuError):
    """A file that is not a loadable AMDGPU code object, with the reason."""


@dataclass(frozen=True)
class TargetId:
    """The target id from ``e_flags`` (processor and xnack/sramecc settings)."""

    processor: str
    xnack: str = "any"
    sramecc: str = "any"
    generic_version: int = 0

    def __str__(self) -> str:
        s = self.processor
        for feat, v in (("sramecc", self.sramecc), ("xnack", self.xnack)):
            if v in ("on", "off"):
                s += f":{feat}{'+' if v == 'on' else '-'}"
        return s

    @property
    def triple_target(self) -> str:
        """The operand of ``.amdgcn_target``."""
        return f"amdgcn-amd-amdhsa--{self}"

    @property
    def family(self) -> str:
        """gfx90a, gfx942, ... grouped: the ISA the emulator and rules key on."""
        return P.family(self.processor)

    def mc_args(self) -> list[str]:
        """``-mcpu``/``-mattr`` for llvm-mc and llvm-objdump."""
        args = [f"--mcpu={self.processor}"]
        attrs = [f"{'+' if v == 'on' else '-'}{f}"
                 for f, v in (("xnack", self.xnack), ("sramecc", self.sramecc))
                 if v in ("on", "off")]
        if attrs:
            args.append("--mattr=" + ",".join(attrs))
        return args


def target_id(e_flags: int, *, path: str | None = None) -> TargetId:
    mach = e_flags & 0xFF
    if mach not in MACH:
        name = OTHER_MACH.get(mach)
        what = (f"processor {name} (EF_AMDGPU_MACH=0x{mach:x}) is not supported" if name
                else f"unknown AMDGPU processor (EF_AMDGPU_MACH=0x{mach:x})")
        raise CodeObjectError(f"{what}; asmevo reads GFX9 code objects: {SUPPORTED}", path=path)
    return TargetId(MACH[mach], xnack=_FEATURE[(e_flags >> 8) & 3],
                    sramecc=_FEATURE[(e_flags >> 10) & 3],
                    generic_version=(e_flags >> 24) & 0xFF)


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: str
    addr: int
    offset: int
    size: int
    align: int
    data: bytes


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: str       # STT_FUNC, STT_OBJECT, STT_NOTYPE, ...
    bind: str       # STB_GLOBAL, STB_LOCAL, ...
    section: str | None


@dataclass(frozen=True)
class ElfImage:
    """The parts of an ELF file asmevo reads, decoded once."""

    e_flags: int
    abi_version: int
    machine: int
    sections: dict[str, Section]
    symbols: tuple[Symbol, ...]
    notes: tuple[tuple[str, int, bytes], ...]   # (owner, type, descriptor)


def read_elf(data: bytes, *, path: str | None = None) -> ElfImage:
    """Parse and validate the ELF container of ``data``."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise CodeObjectError("not an ELF file (bad magic)", path=path)
    if data[4] != 2 or data[5] != 1:
        raise CodeObjectError("not a 64-bit little-endian ELF", path=path)
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != EM_AMDGPU:
        kind = {EM_CUDA: "an NVIDIA cubin", EM_X86_64: "an x86-64 object"}.get(
            machine, f"e_machine {machine}")
        raise CodeObjectError(f"not an AMDGPU code object: {kind}", path=path)
    if data[7] != ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(f"ELF OS/ABI {data[7]} is not AMDGPU HSA", path=path)
    try:
        return _parsed(bytes(data), path)
    except CodeObjectError:
        raise
    except (ELFError, struct.error, ValueError, IndexError, KeyError, TypeError,
            AttributeError, UnicodeDecodeError, OverflowError, MemoryError, AssertionError) as exc:
        raise CodeObjectError(f"corrupt ELF ({type(exc).__name__}: {exc})", path=path) from exc


@cached("targets.amdgpu.elf._parsed", 32)
def _parsed(data: bytes, path: str | None) -> ElfImage:
    """:func:`_parse`, once per content: a candidate's bytes are read by loading, by the
    disassembly replay and by the ABI gate (an ElfImage is read-only). A file that
    differs from one parsed before only inside its ``.text`` contents (a candidate
    written into K0's rebuild) is that image with the new ``.text``: see
    :class:`_Layouts`."""
    img = _LAYOUTS.image(data)
    if img is None:
        img = _parse(data, path)
        _LAYOUTS.add(data, img)
    return img


class _Layouts:
    """Parsed files whose ``.text`` contents no other part of the parse reads.

    :func:`_parse` reads the ELF header, the section header table and every section's
    contents. Where ``.text``'s bytes lie apart from all of those (and from the
    program headers), a file of the same length that equals a kept one outside them
    parses to the kept image with that section's ``data`` replaced, field for field;
    anything else is parsed in full."""

    def __init__(self, size: int = 8):
        self.size = size
        self.kept: list[tuple[bytes, int, int, ElfImage]] = []

    def image(self, data: bytes) -> ElfImage | None:
        for old, lo, hi, img in self.kept:
            if len(old) == len(data) and data[:lo] == old[:lo] and data[hi:] == old[hi:]:
                text = img.sections[".text"]
                sections = dict(img.sections)
                sections[".text"] = Section(text.index, text.name, text.type, text.addr,
                                            text.offset, text.size, text.align, data[lo:hi])
                return ElfImage(img.e_flags, img.abi_version, img.machine, sections,
                                img.symbols, img.notes)
        return None

    def add(self, data: bytes, img: ElfImage) -> None:
        text = img.sections.get(".text")
        if text is None or text.type == "SHT_NOBITS" or text.size == 0:
            return
        lo, hi = text.offset, text.offset + text.size
        phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
        if shnum == 0 or shentsize != 64:
            return          # extended numbering, odd headers: parsed in full every time
        others = [(0, 64), (shoff, shoff + 64 * shnum), (phoff, phoff + phentsize * phnum)]
        for i in range(shnum):      # every section, not only the first of each name
            if i != text.index:
                sh_type, = struct.unpack_from("<I", data, shoff + 64 * i + 4)
                off, size = struct.unpack_from("<QQ", data, shoff + 64 * i + 0x18)
                if sh_type != 8:    # SHT_NOBITS: nothing in the file
                    others.append((off, off + size))
        if any(a < hi and lo < b for a, b in others if b > a):
            return
        self.kept = [(data, lo, hi, img)] + self.kept[:self.size - 1]


_LAYOUTS = _Layouts()


def _parse(data: bytes, path: str | None) -> ElfImage:
    elf = ELFFile(io.BytesIO(data))
    hdr = elf.header
    shnum, shoff = elf.num_sections(), hdr["e_shoff"]
    if shnum == 0 or shoff + shnum * hdr["e_shentsize"] > len(data):
        raise CodeObjectError("section header table lies outside the file", path=path)
    sections: dict[str, Section] = {}
    notes: list[tuple[str, int, bytes]] = []
    symbols: list[Symbol] = []
    by_index: dict[int, str] = {}
    for i, sec in enumerate(elf.iter_sections()):
        sh = sec.header
        if sh["sh_type"] != "SHT_NOBITS" and sh["sh_offset"] + sh["sh_size"] > len(data):
            raise CodeObjectError(f"section {sec.name or i} lies outside the file", path=path)
        body = b"" if sh["sh_type"] == "SHT_NOBITS" else sec.data()
        by_index[i] = sec.name
        sections.setdefault(sec.name, Section(i, sec.name, sh["sh_type"], sh["sh_addr"],
                                              sh["sh_offset"], sh["sh_size"],
                                              sh["sh_addralign"], body))
        if sh["sh_type"] == "SHT_NOTE":
            notes.extend(_notes(body, path))
    for secname in (".symtab", ".dynsym"):
        tab = elf.get_section_by_name(secname)
        if tab is None:
            continue
        strtab = elf.get_section(tab["sh_link"]).data()
        for s in tab.iter_symbols():
            shndx = s["st_shndx"]
            symbols.append(Symbol(_name(strtab, s["st_name"], path), s["st_value"], s["st_size"],
                                  s["st_info"]["type"],
                                  s["st_info"]["bind"],
                                  by_index.get(shndx) if isinstance(shndx, int) else None))
        if symbols:
            break  # .symtab is a superset of .dynsym; use the first present
    return ElfImage(hdr["e_flags"], data[8], hdr["e_machine"] if isinstance(hdr["e_machine"], int)
                    else EM_AMDGPU, sections, tuple(symbols), tuple(notes))


def _name(strtab: bytes, offset: int, path: str | None) -> str:
    """A symbol name, decoded losslessly: UTF-8, with any other byte kept as a
    surrogate escape (``name.encode("utf-8", "surrogateescape")`` gives the bytes
    back; pyelftools' own decoding replaces them)."""
    if not 0 <= offset < len(strtab):
        raise CodeObjectError(f"symbol name offset {offset} lies outside its string table",
                              path=path)
    end = strtab.find(b"\0", offset)
    return strtab[offset:end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape")


def _notes(body: bytes, path: str | None) -> list[tuple[str, int, bytes]]:
    """Parse a note section by hand: pyelftools tolerates too much."""
    out, pos = [], 0
    while pos + 12 <= len(body):
        namesz, descsz, ntype = struct.unpack_from("<III", body, pos)
        pos += 12
        name_end = pos + namesz
        desc_start = pos + ((namesz + 3) & ~3)
        desc_end = desc_start + descsz
        if desc_end > len(body):
            raise CodeObjectError("note entry runs past the end of its section", path=path)
        owner = body[pos:name_end].rstrip(b"\0").decode("ascii", errors="replace")
        out.append((owner, ntype, body[desc_start:desc_end]))
        pos = (desc_end + 3) & ~3
    return out
