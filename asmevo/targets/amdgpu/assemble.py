"""Assembling and linking: ``.s`` -> ``llvm-mc`` -> ``ld.lld -shared`` -> bytes.

The tool step under both recovery (encodings checked by reassembly) and
:mod:`asmevo.targets.amdgpu.build` (a program rebuilt). Builds are cached by
content: the key is the assembly text plus the tool version, so re-evaluating
an identical candidate costs a file read.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from asmevo import knobs
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.toolchain import Toolchain, ToolchainError, find_toolchain


class BuildError(Refused):
    """Assembly or linking failed; the message carries the assembler's complaint."""

    status = "build"

    @property
    def reason(self) -> str:
        return self.message


def _mc_args(target: TargetId) -> list[str]:
    return ["-triple=amdgcn-amd-amdhsa", *target.mc_args()]


def assemble_object(asm: str, target: TargetId, tc: Toolchain | None = None) -> bytes:
    """Assemble ``asm`` to a relocatable object (no link)."""
    tc = tc or find_toolchain(target.processor)
    with tempfile.TemporaryDirectory(prefix="asmevo-as-") as tmp:
        src, obj = Path(tmp) / "k.s", Path(tmp) / "k.o"
        src.write_text(asm)
        try:
            tc.run("llvm-mc", [*_mc_args(target), "-filetype=obj", str(src), "-o", str(obj)])
        except ToolchainError as exc:
            raise BuildError(f"assembly failed: {exc.message}") from exc
        return obj.read_bytes()


def link(obj: bytes, tc: Toolchain | None = None, *,
         section_starts: dict[str, int] | None = None) -> bytes:
    """Link a relocatable object into a shared code object.

    ``section_starts`` pins sections to K0's addresses: a kernel descriptor
    stores the distance from itself to its code, so K0's layout must be kept
    even when K0 carried symbols (e.g. HIP's ``__hip_cuid_*``) we do not emit.
    """
    tc = tc or find_toolchain()
    pins = [f"--section-start={name}=0x{addr:x}" for name, addr in (section_starts or {}).items()]
    with tempfile.TemporaryDirectory(prefix="asmevo-ld-") as tmp:
        o, out = Path(tmp) / "k.o", Path(tmp) / "k.co"
        o.write_bytes(obj)
        try:
            tc.run("ld.lld", ["-shared", "--no-undefined", *pins, str(o), "-o", str(out)])
        except ToolchainError as exc:
            raise BuildError(f"link failed: {exc.message}") from exc
        return out.read_bytes()


def build_asm(asm: str, target: TargetId, *, section_starts: dict[str, int] | None = None,
              cache: bool = True, tc: Toolchain | None = None) -> bytes:
    """Assemble and link ``asm`` into code object bytes, through the content cache."""
    tc = tc or find_toolchain(target.processor)
    layout = ",".join(f"{k}={v:x}" for k, v in sorted((section_starts or {}).items()))
    key = hashlib.sha256(f"{tc.version}\0{target.triple_target}\0{layout}\0{asm}".encode()
                         ).hexdigest()
    path = knobs.cache_dir() / "build" / key[:2] / f"{key}.co"
    if cache and path.exists():
        return path.read_bytes()
    data = link(assemble_object(asm, target, tc), tc, section_starts=section_starts)
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs speed
    return data
