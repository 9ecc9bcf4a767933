"""Finding and running the LLVM tools that read and write AMDGPU code.

Lookup order: ``ASMEVO_LLVM_DIR``, then ``$ROCM_PATH/llvm/bin``, then the
newest ``/usr/lib/llvm-N/bin`` with N >= 19 (older releases lack gfx942
fixes we rely on). Tools always run from an argument list, never a shell.
"""
from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from asmevo import knobs
from asmevo.errors import AsmevoError

TOOLS = ("llvm-objdump", "llvm-mc", "ld.lld", "llvm-objcopy", "llvm-readelf")
MIN_LLVM = 19

INSTALL_HINT = (
    "install LLVM with the AMDGPU target, e.g. `apt-get install llvm-19 lld-19` "
    "(Debian/Ubuntu) or ROCm, or set ASMEVO_LLVM_DIR to a directory holding "
    + ", ".join(TOOLS))


class ToolchainError(AsmevoError):
    """A required LLVM tool is missing or failed."""


@dataclass(frozen=True)
class Toolchain:
    """Absolute paths of the LLVM tools, all from one installation."""

    bin_dir: Path

    def path(self, tool: str) -> Path:
        return self.bin_dir / tool

    def run(self, tool: str, args: list[str], *, input: bytes | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run ``tool`` with ``args`` (no shell); raise with its stderr on failure."""
        cmd = [str(self.path(tool)), *map(str, args)]
        try:
            proc = subprocess.run(cmd, input=input, capture_output=True,
                                  timeout=timeout, check=False)
        except FileNotFoundError as exc:
            raise ToolchainError(f"{tool} not found at {self.path(tool)}; {INSTALL_HINT}") from exc
        except subprocess.TimeoutExpired as exc:
            raise ToolchainError(f"{tool} timed out after {timeout:.0f}s") from exc
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            shown = "\n".join(err[:6]) + (f"\n... ({len(err) - 6} more lines)" if len(err) > 6 else "")
            raise ToolchainError(f"{tool} failed (exit {proc.returncode}): {shown}")
        return proc

    @functools.cached_property
    def version(self) -> str:
        """The LLVM version string, part of every build-cache key."""
        out = self.run("llvm-mc", ["--version"]).stdout.decode()
        m = re.search(r"LLVM version ([\w.\-+]+)", out)
        return m.group(1) if m else out.strip().splitlines()[0]


def _has_all(d: Path) -> bool:
    return all((d / t).exists() for t in TOOLS)


def _candidates() -> list[Path]:
    found = []
    for d in Path("/usr/lib").glob("llvm-*/bin"):
        m = re.fullmatch(r"llvm-(\d+)", d.parent.name)
        if m and int(m.group(1)) >= MIN_LLVM:
            found.append((int(m.group(1)), d))
    return [d for _, d in sorted(found, reverse=True)]


@functools.lru_cache(maxsize=None)
def _find(explicit: str | None, rocm: str) -> Toolchain:
    if explicit is not None:
        d = Path(explicit)
        missing = [t for t in TOOLS if not (d / t).exists()]
        if missing:
            raise ToolchainError(
                f"ASMEVO_LLVM_DIR={d} lacks {', '.join(missing)}; {INSTALL_HINT}")
        return Toolchain(d)
    for d in [Path(rocm) / "llvm" / "bin", *_candidates()]:
        if _has_all(d):
            return Toolchain(d)
    raise ToolchainError(f"no LLVM toolchain (>= {MIN_LLVM}) found; {INSTALL_HINT}")


def find_toolchain() -> Toolchain:
    """The toolchain to use, following the lookup order in the module docstring."""
    explicit = knobs.llvm_dir()
    return _find(str(explicit) if explicit else None, str(knobs.rocm_path()))
