"""Finding and running the LLVM tools that read and write AMDGPU code.

Lookup order: ``ASMEVO_LLVM_DIR``, then ``$ROCM_PATH/llvm/bin``, then the
newest ``/usr/lib/llvm-N/bin`` with N >= 19 (older releases lack gfx942
fixes we rely on). The lookup is per target processor: the first installation
whose ``llvm-mc`` knows the processor wins (LLVM 19 does not know gfx950, and
its disassembler crashes on gfx950 code, so gfx950 gets LLVM >= 20 where one is
installed). ``ASMEVO_LLVM_DIR`` is the only candidate when set. Tools always run
from an argument list, never a shell.
"""
from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from asmevo import knobs
from asmevo.memo import cached
from asmevo.targets.amdgpu.errors import AmdgpuError
from asmevo.targets.amdgpu import processors as P
from asmevo.process import describe_limit, exit_status, first_diagnostic, input_bytes, run_tool

TOOLS = ("llvm-objdump", "llvm-mc", "ld.lld", "llvm-objcopy", "llvm-readelf")
MIN_LLVM = P.MIN_LLVM

# The first upstream LLVM release that knows a processor newer than MIN_LLVM's
# (for the install hint only: whether an installation knows it is asked of llvm-mc).
FIRST_LLVM = {p.name: p.llvm_min for p in P.PROCESSORS.values() if p.llvm_min > MIN_LLVM}
NEWER_LLVM_HINT = "`apt-get install llvm-22 lld-22` (Debian 12)"

INSTALL_HINT = (
    "install LLVM with the AMDGPU target, e.g. `apt-get install llvm-19 lld-19` "
    "(Debian/Ubuntu) or ROCm, or set ASMEVO_LLVM_DIR to a directory holding "
    + ", ".join(TOOLS))


class ToolchainError(AmdgpuError):
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

    @property
    def major(self) -> int:
        m = re.match(r"\d+", self.version)
        return int(m.group(0)) if m else 0

    def describe(self) -> str:
        """What inspect and roundtrip print: ``LLVM 22.1.8 (/usr/lib/llvm-22/bin)``."""
        return f"LLVM {self.version} ({self.bin_dir})"

    def knows(self, processor: str) -> bool:
        """Whether this installation's llvm-mc accepts ``--mcpu=processor``."""
        return _knows(self, processor)


@cached("targets.amdgpu.toolchain._knows", None)
def _knows(tc: Toolchain, processor: str) -> bool:
    # an unknown processor is only a warning ("... is not a recognized processor")
    proc = tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", f"--mcpu={processor}"], input=b"")
    return b"not a recognized processor" not in proc.stderr


def processor_hint(processor: str) -> str:
    """What to install for ``processor``, in one clause."""
    need = FIRST_LLVM.get(processor, MIN_LLVM)
    return (f"{processor} needs LLVM >= {need} with the AMDGPU target: install e.g. "
            f"{NEWER_LLVM_HINT if need > MIN_LLVM else '`apt-get install llvm-19 lld-19`'}"
            " or set ASMEVO_LLVM_DIR to its bin directory")


def _has_all(d: Path) -> bool:
    return all((d / t).exists() for t in TOOLS)


def _candidates() -> list[Path]:
    found = []
    for d in Path("/usr/lib").glob("llvm-*/bin"):
        m = re.fullmatch(r"llvm-(\d+)", d.parent.name)
        if m and int(m.group(1)) >= MIN_LLVM:
            found.append((int(m.group(1)), d))
    return [d for _, d in sorted(found, reverse=True)]


def installed(rocm: Path | None = None) -> list[Toolchain]:
    """Every complete installation the lookup considers, in lookup order (not
    ``ASMEVO_LLVM_DIR``): ``$ROCM_PATH/llvm/bin``, then ``/usr/lib/llvm-N/bin`` newest first."""
    rocm = knobs.rocm_path() if rocm is None else rocm
    return [Toolchain(d) for d in [rocm / "llvm" / "bin", *_candidates()] if _has_all(d)]


@cached("targets.amdgpu.toolchain._find", None)
def _find(explicit: str | None, rocm: str, processor: str | None) -> Toolchain:
    if explicit is not None:
        d = Path(explicit)
        missing = [t for t in TOOLS if not (d / t).exists()]
        if missing:
            raise ToolchainError(
                f"ASMEVO_LLVM_DIR={d} lacks {', '.join(missing)}; {INSTALL_HINT}")
        tc = Toolchain(d)
        if processor is not None and not tc.knows(processor):
            raise ToolchainError(f"ASMEVO_LLVM_DIR={d} holds LLVM {tc.version}, which does "
                                 f"not know {processor}; {processor_hint(processor)}")
        return tc
    found = installed(Path(rocm))
    for tc in found:
        if processor is None or tc.knows(processor):
            return tc
    if not found:
        raise ToolchainError(f"no LLVM toolchain (>= {MIN_LLVM}) found; {INSTALL_HINT}")
    have = ", ".join(tc.describe() for tc in found)
    raise ToolchainError(f"no installed LLVM knows {processor} (found {have}); "
                         f"{processor_hint(processor)}")


def find_toolchain(processor: str | None = None) -> Toolchain:
    """The toolchain for ``processor`` (any AMDGPU one when None), following the
    lookup order in the module docstring."""
    explicit = knobs.llvm_dir()
    return _find(str(explicit) if explicit else None, str(knobs.rocm_path()), processor)


def find_clang(processor: str | None = None) -> Path:
    """clang for building HIP test and corpus kernels: beside ``find_toolchain(processor)``'s
    llvm-mc, else the newest installed LLVM's that has one (Debian's llvm-22 ships without
    clang; setup.sh installs clang-19)."""
    for tc in [find_toolchain(processor), *installed()]:
        clang = tc.bin_dir / "clang"
        if clang.exists() and (processor is None or tc.knows(processor)):
            return clang
    raise ToolchainError(f"no clang with the AMDGPU target found beside any LLVM; "
                         f"{INSTALL_HINT}")
