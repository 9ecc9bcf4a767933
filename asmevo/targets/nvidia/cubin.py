"""An NVIDIA cubin (ELF ``EM_CUDA``) as a plain value: kernels, parameters, code words.

:func:`load` reads bytes and decodes what later stages rely on: each kernel's
``.text.<name>`` section (its 128-bit instruction words), its parameter layout
(``EIATTR_KPARAM_INFO`` in ``.nv.info.<name>``), static shared memory
(``.nv.shared.<name>``), register count (``EIATTR_REGCOUNT`` in ``.nv.info``),
relocations against its code and every instruction offset the metadata pins
(``EIATTR_*_INSTR_OFFSETS``). Anything malformed is a :class:`CubinError`
naming the file and the part that is wrong.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from asmevo.targets.nvidia.errors import NvidiaError
from asmevo.files import read_input
from asmevo.targets.kernelset import KernelSet

EM_CUDA = 190
WORD_BYTES = 16           # Volta and later: one 128-bit word per instruction
STO_CUDA_ENTRY = 0x10     # st_other bit of a kernel (global) entry symbol

EIFMT = {1: "NVAL", 2: "BVAL", 3: "HVAL", 4: "SVAL"}
# (attribute << 8 | format) -> name; from cuobjdump -elf and CuAssembler's table
EIATTR = {
    0x0401: "EIATTR_CTAIDZ_USED", 0x0504: "EIATTR_MAX_THREADS", 0x0A04: "EIATTR_PARAM_CBANK",
    0x0F04: "EIATTR_EXTERNS", 0x1004: "EIATTR_REQNTID", 0x1104: "EIATTR_FRAME_SIZE",
    0x1204: "EIATTR_MIN_STACK_SIZE", 0x1704: "EIATTR_KPARAM_INFO",
    0x1903: "EIATTR_CBANK_PARAM_SIZE", 0x1B03: "EIATTR_MAXREG_COUNT",
    0x1C04: "EIATTR_EXIT_INSTR_OFFSETS", 0x1D04: "EIATTR_S2RCTAID_INSTR_OFFSETS",
    0x1E04: "EIATTR_CRS_STACK_SIZE", 0x2304: "EIATTR_MAX_STACK_SIZE",
    0x2504: "EIATTR_LD_CACHEMOD_INSTR_OFFSETS", 0x2704: "EIATTR_ATOM_SYS_INSTR_OFFSETS",
    0x2804: "EIATTR_COOP_GROUP_INSTR_OFFSETS", 0x2F04: "EIATTR_REGCOUNT",
    0x3104: "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS", 0x3404: "EIATTR_INDIRECT_BRANCH_TARGETS",
    0x3704: "EIATTR_CUDA_API_VERSION",
}


class CubinError(NvidiaError):
    """A file that is not a loadable sm_90 cubin, with the reason."""


@dataclass(frozen=True)
class InfoAttr:
    """One ``.nv.info`` entry: its attribute code, format and raw value bytes."""

    code: int        # attribute << 8 | format, as in EIATTR
    value: bytes

    @property
    def name(self) -> str:
        return EIATTR.get(self.code, f"EIATTR_0x{self.code:04x}")

    def words(self) -> tuple[int, ...]:
        n = len(self.value) // 4
        return struct.unpack_from(f"<{n}I", self.value)


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ordinal and byte range in the parameter constant bank."""

    ordinal: int
    offset: int
    size: int
    log_align: int = 0
    space: int = 0


@dataclass(frozen=True)
class Kernel:
    """One kernel entry: its code section and launch-relevant metadata."""

    name: str
    section: str                  # .text.<name>
    file_offset: int              # where the code starts in the file
    code: bytes
    params: tuple[Param, ...]
    param_size: int               # EIATTR_CBANK_PARAM_SIZE (bytes of parameters)
    shared_size: int              # static shared memory (.nv.shared.<name>)
    regcount: int
    frame_size: int
    max_threads: tuple[int, ...] | None
    req_ntid: tuple[int, ...] | None
    info: tuple[InfoAttr, ...]
    pinned: frozenset[int] = frozenset()   # code offsets relocations name: never shifted
    # Every code offset the metadata lists (EIATTR_*_INSTR_OFFSETS), as
    # (attribute name, file position of each u32 value, the values): an edit that
    # shifts instructions rewrites these values in place.
    offset_lists: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = ()

    @property
    def words(self) -> tuple[int, ...]:
        """The 128-bit instruction words, little-endian, in code order."""
        c = self.code
        return tuple(int.from_bytes(c[i:i + WORD_BYTES], "little")
                     for i in range(0, len(c), WORD_BYTES))

    @property
    def exit_offsets(self) -> tuple[int, ...]:
        return tuple(v for a in self.info if a.name == "EIATTR_EXIT_INSTR_OFFSETS"
                     for v in a.words())


@dataclass(frozen=True)
class Cubin(KernelSet):
    """A loaded cubin. ``data`` is the exact bytes it was read from; ``sha256``,
    ``kernel_names`` and ``kernel(name)`` (a :class:`CubinError` if absent) come from
    :class:`~asmevo.targets.kernelset.KernelSet`."""

    lookup_error: ClassVar[type[CubinError]] = CubinError

    data: bytes
    path: str | None
    sm: int                        # 90 for sm_90 / sm_90a
    e_flags: int
    kernels: tuple[Kernel, ...]
    sections: tuple[str, ...] = field(default=())


def load(data: bytes | str | Path, *, path: str | None = None) -> Cubin:
    """Load a cubin from bytes or a file path."""
    if isinstance(data, (str, Path)):
        path = str(data)
        data = read_input(data, error=CubinError)
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise CubinError("not an ELF file (bad magic)", path=path)
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF", path=path)
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != EM_CUDA:
        raise CubinError(f"not an NVIDIA cubin (e_machine {machine}, expected {EM_CUDA})",
                         path=path)
    try:
        return _parse(data, path)
    except CubinError:
        raise
    except (ELFError, struct.error, ValueError, IndexError, KeyError, TypeError,
            AttributeError, UnicodeDecodeError, OverflowError, AssertionError) as exc:
        raise CubinError(f"corrupt cubin ({type(exc).__name__}: {exc})", path=path) from exc


def parse_info(body: bytes, *, path: str | None = None, section: str = ".nv.info"
               ) -> tuple[InfoAttr, ...]:
    """Decode a ``.nv.info`` section: (format, attribute, value) records."""
    out, pos = [], 0
    while pos < len(body):
        if pos + 4 > len(body):
            raise CubinError(f"{section}: truncated record at byte {pos}", path=path)
        fmt, attr = body[pos], body[pos + 1]
        if fmt not in EIFMT:
            raise CubinError(f"{section}: unknown record format {fmt} at byte {pos}", path=path)
        if fmt == 4:
            size = struct.unpack_from("<H", body, pos + 2)[0]
            if pos + 4 + size > len(body):
                raise CubinError(f"{section}: record at byte {pos} runs past the section",
                                 path=path)
            value, pos = body[pos + 4:pos + 4 + size], pos + 4 + size
        else:
            value, pos = body[pos + 2:pos + 4], pos + 4
        out.append(InfoAttr(attr << 8 | fmt, value))
    return tuple(out)


def _parse(data: bytes, path: str | None) -> Cubin:
    elf = ELFFile(io.BytesIO(data))
    hdr = elf.header
    shnum = elf.num_sections()
    if shnum == 0 or hdr["e_shoff"] + shnum * hdr["e_shentsize"] > len(data):
        raise CubinError("section header table lies outside the file", path=path)
    secs = {}
    names = []
    for i, sec in enumerate(elf.iter_sections()):
        sh = sec.header
        if sh["sh_type"] != "SHT_NOBITS" and sh["sh_offset"] + sh["sh_size"] > len(data):
            raise CubinError(f"section {sec.name or i} lies outside the file", path=path)
        secs[sec.name] = sec
        names.append(sec.name)
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None:
        raise CubinError("no .symtab", path=path)
    syms = list(symtab.iter_symbols())
    regcount: dict[int, int] = {}
    frame: dict[int, int] = {}
    if ".nv.info" in secs:
        for a in parse_info(secs[".nv.info"].data(), path=path):
            w = a.words() if a.code & 0xFF == 4 else ()
            if a.name == "EIATTR_REGCOUNT" and len(w) >= 2:
                regcount[w[0]] = w[1]
            elif a.name == "EIATTR_FRAME_SIZE" and len(w) >= 2:
                frame[w[0]] = w[1]
    kernels = []
    for idx, s in enumerate(syms):
        if s["st_info"]["type"] != "STT_FUNC" or not s.name:
            continue
        other = s["st_other"]
        raw_other = other if isinstance(other, int) else _raw_st_other(data, symtab, idx)
        if not raw_other & STO_CUDA_ENTRY:
            continue
        kernels.append(_kernel(s.name, idx, secs, regcount.get(idx), frame.get(idx, 0), path))
    if not kernels:
        raise CubinError("no kernels (no STO_CUDA_ENTRY function symbols)", path=path)
    sm = (hdr["e_flags"] >> 8) & 0xFF
    return Cubin(data=data, path=path, sm=sm, e_flags=hdr["e_flags"],
                 kernels=tuple(sorted(kernels, key=lambda k: k.file_offset)),
                 sections=tuple(names))


def _raw_st_other(data: bytes, symtab, index: int) -> int:
    """pyelftools decodes st_other into a dict; the CUDA bits live in the raw byte."""
    off = symtab.header["sh_offset"] + index * symtab.header["sh_entsize"] + 5
    return data[off]


def _kernel(name: str, symidx: int, secs: dict, regcount: int | None, frame: int,
            path: str | None) -> Kernel:
    text = secs.get(f".text.{name}")
    if text is None:
        raise CubinError(f"no section .text.{name}", path=path, kernel=name)
    code = text.data()
    if len(code) % WORD_BYTES:
        raise CubinError(f".text.{name} is {len(code)} bytes, not a whole number of "
                         f"{WORD_BYTES}-byte words", path=path, kernel=name)
    if regcount is None:
        regcount = (text.header["sh_info"] >> 24) & 0xFF   # sm_70+: the count in sh_info
    info_sec = secs.get(f".nv.info.{name}")
    info = parse_info(info_sec.data(), path=path, section=info_sec.name) if info_sec else ()
    params, param_size, max_threads, req_ntid = [], 0, None, None
    pinned: set[int] = set()
    lists = []
    pos = info_sec.header["sh_offset"] if info_sec else 0
    for a in info:
        start, pos = pos + 4, pos + 4 + (len(a.value) if a.code & 0xFF == 4 else 0)
        if a.name == "EIATTR_KPARAM_INFO":
            _index, ordinal, offset, flags = struct.unpack("<IHHI", a.value[:12])
            params.append(Param(ordinal, offset, (flags >> 18) & 0x3FFF, flags & 0xFF,
                                (flags >> 8) & 0xF))
        elif a.name == "EIATTR_CBANK_PARAM_SIZE":
            param_size = struct.unpack("<H", a.value)[0]
        elif a.name == "EIATTR_MAX_THREADS":
            max_threads = a.words()
        elif a.name == "EIATTR_REQNTID":
            req_ntid = a.words()
        elif a.name.endswith("_INSTR_OFFSETS"):
            vals = a.words()
            bad = [v for v in vals if v >= len(code) or v % WORD_BYTES]
            if bad:
                raise CubinError(f"{a.name} names offset 0x{bad[0]:x}, not an instruction of "
                                 f".text.{name}", path=path, kernel=name)
            lists.append((a.name, tuple(start + 4 * i for i in range(len(vals))), vals))
        elif a.name == "EIATTR_INDIRECT_BRANCH_TARGETS":
            pinned.update(range(0, len(code), WORD_BYTES))   # jump tables: nothing may move
    params.sort(key=lambda p: p.ordinal)
    if not param_size and params:
        param_size = max(p.offset + p.size for p in params)
    rela = secs.get(f".rela.text.{name}") or secs.get(f".rel.text.{name}")
    if rela is not None and rela.header["sh_size"]:
        pinned.update(r["r_offset"] & ~(WORD_BYTES - 1) for r in rela.iter_relocations())
    shared = secs.get(f".nv.shared.{name}")
    return Kernel(name=name, section=text.name, file_offset=text.header["sh_offset"], code=code,
                  params=tuple(params), param_size=param_size,
                  shared_size=shared.header["sh_size"] if shared is not None else 0,
                  regcount=regcount, frame_size=frame, max_threads=max_threads,
                  req_ntid=req_ntid, info=info, pinned=frozenset(pinned),
                  offset_lists=tuple(lists))
