"""An AMDGPU code object as a plain value: its kernels, descriptors and metadata.

:func:`load` reads bytes (never a path it then keeps open) and validates every
cross-reference a later stage relies on: each ``.kd`` symbol lies inside its
section and is 64 bytes, each kernel entry lies inside ``.text``, and the
metadata note decodes. Anything else is a :class:`CodeObjectError`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from asmevo.files import read_input
from asmevo.targets.amdgpu import descriptor as kdesc
from asmevo.targets.amdgpu import metadata as meta
from asmevo.targets.amdgpu.elf import (ABI_TO_COV, CodeObjectError, ElfImage, Section,
                                       Symbol, TargetId, read_elf, target_id)
from asmevo.targets.kernelset import KernelSet


@dataclass(frozen=True)
class Kernel:
    """One kernel: where its code lies and how it is launched."""

    name: str
    descriptor: kdesc.KernelDescriptor
    kd_bytes: bytes
    kd_address: int
    entry: int          # address of the first instruction
    code_end: int       # address one past its last byte in .text
    meta: meta.KernelMeta | None

    @property
    def code_size(self) -> int:
        return self.code_end - self.entry

    @property
    def kernarg_size(self) -> int:
        """Bytes of kernarg segment the kernel reads: the descriptor is authoritative."""
        if self.descriptor.kernarg_size:
            return self.descriptor.kernarg_size
        return self.meta.kernarg_segment_size if self.meta else 0


@dataclass(frozen=True)
class CodeObject(KernelSet):
    """A loaded code object. ``data`` is the exact bytes it was read from; ``sha256``,
    ``kernel_names`` and ``kernel(name)`` (a :class:`CodeObjectError` if absent) come
    from :class:`~asmevo.targets.kernelset.KernelSet`."""

    lookup_error: ClassVar[type[CodeObjectError]] = CodeObjectError

    data: bytes
    path: str | None
    target: TargetId
    e_flags: int
    code_object_version: int
    sections: dict[str, Section]
    symbols: tuple[Symbol, ...]
    kernels: tuple[Kernel, ...]
    metadata: dict
    labels: dict[int, str] = field(default_factory=dict)  # address -> local code label

    @property
    def text(self) -> Section:
        return self.sections[".text"]

    def text_bytes(self, start: int, end: int) -> bytes:
        t = self.text
        return t.data[start - t.addr:end - t.addr]


def load(data: bytes | str | Path, *, path: str | None = None) -> CodeObject:
    """Load an AMDGPU code object from bytes or a file path."""
    if isinstance(data, (str, Path)):
        path = str(data)
        data = read_input(data, error=CodeObjectError)
    img = read_elf(data, path=path)
    cov = ABI_TO_COV.get(img.abi_version)
    if cov is None:
        raise CodeObjectError(f"unsupported HSA ABI version {img.abi_version} "
                              "(code object v4, v5 and v6 are supported)", path=path)
    tid = target_id(img.e_flags, path=path)
    if ".text" not in img.sections:
        raise CodeObjectError("no .text section", path=path)
    doc = _metadata(img, path)
    metas = {m.symbol: m for m in meta.kernel_entries(doc, path=path)}
    kernels = _kernels(img, metas, path)
    if not kernels:
        raise CodeObjectError("no kernels (no <name>.kd descriptor symbols)", path=path)
    text = img.sections[".text"]
    kernel_entries = {k.entry for k in kernels}
    labels = {s.value: s.name for s in img.symbols
              if s.section == ".text" and s.type == "STT_NOTYPE" and s.name
              and s.value not in kernel_entries and text.addr <= s.value < text.addr + text.size}
    return CodeObject(data=data, path=path, target=tid, e_flags=img.e_flags,
                      code_object_version=cov, sections=img.sections, symbols=img.symbols,
                      kernels=tuple(kernels), metadata=doc, labels=labels)


def _metadata(img: ElfImage, path: str | None) -> dict:
    blobs = [desc for owner, ntype, desc in img.notes
             if owner == "AMDGPU" and ntype == meta.NT_AMDGPU_METADATA]
    if not blobs:
        raise CodeObjectError("no NT_AMDGPU_METADATA note", path=path)
    return meta.decode(blobs[0], path=path)


def _kernels(img: ElfImage, metas: dict[str, meta.KernelMeta], path: str | None) -> list[Kernel]:
    text = img.sections[".text"]
    syms = {s.name: s for s in img.symbols if s.name}
    func_starts = sorted({s.value for s in img.symbols
                          if s.section == ".text" and s.type == "STT_FUNC"})
    text_end = text.addr + text.size
    kernels = []
    for s in img.symbols:
        if not s.name.endswith(".kd") or s.type != "STT_OBJECT":
            continue
        name = s.name[:-3]
        sec = img.sections.get(s.section or "")
        if sec is None or not (sec.addr <= s.value and s.value + kdesc.KD_SIZE <= sec.addr + sec.size):
            raise CodeObjectError("kernel descriptor lies outside its section",
                                  path=path, kernel=name)
        raw = sec.data[s.value - sec.addr:s.value - sec.addr + kdesc.KD_SIZE]
        kd = kdesc.decode(raw, kernel=name, path=path)
        entry = s.value + kd.kernel_code_entry_byte_offset
        if not text.addr <= entry < text_end:
            raise CodeObjectError(f"kernel entry 0x{entry:x} lies outside .text",
                                  path=path, kernel=name)
        fsym = syms.get(name)
        if fsym is not None and fsym.value == entry and fsym.size:
            end = min(entry + fsym.size, text_end)
        else:
            end = next((a for a in func_starts if a > entry), text_end)
        kernels.append(Kernel(name=name, descriptor=kd, kd_bytes=raw, kd_address=s.value,
                              entry=entry, code_end=end, meta=metas.get(s.name)))
    kernels.sort(key=lambda k: k.entry)
    return kernels
