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
from asmevo.process import describe_limit, exit_status, first_diagnostic, input_bytes, run_tool

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
            timeout: float | None = None) -> subprocess.CompletedProcess:
        """Run ``tool`` with ``args`` (no shell, own process group, a time limit scaled
        to its input: :mod:`asmevo.process`); raise with its diagnostics on failure.

        The error's message is one line (the first ``error:`` line, or the first
        line); the tool's whole stderr is kept in ``detail`` for ``--verbose``.
        """
        cmd = [str(self.path(tool)), *map(str, args)]
        try:
            proc = run_tool(cmd, stdin=input, timeout=timeout)
        except FileNotFoundError as exc:
            raise ToolchainError(f"{tool} not found at {self.path(tool)}; {INSTALL_HINT}") from exc
        except subprocess.TimeoutExpired as exc:
            n = input_bytes(cmd[1:], input)
            raise ToolchainError(f"{tool} timed out after {describe_limit(exc.timeout, n)}; "
                                 "it was killed") from exc
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            raise ToolchainError(f"{tool} failed ({exit_status(proc.returncode)}): "
                                 f"{first_diagnostic(err)}", detail=err)
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
