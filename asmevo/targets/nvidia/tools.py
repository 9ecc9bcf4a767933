"""Where the NVIDIA binary tools (nvdisasm, ptxas, cuobjdump) are found, and running them.

Lookup order, first hit wins: ``$ASMEVO_CUDA_BIN`` (a directory), the tools bundled
in the ``triton`` wheel (``triton/backends/nvidia/bin``), ``$CUDA_HOME/bin``,
``/usr/local/cuda*/bin`` (newest first), then ``PATH``. A tool that is nowhere
raises one :class:`ToolError` that names the variable to set.

ptxas is chosen by the PTX it must compile (:func:`ptxas_for`): a ptxas accepts
PTX only up to its own ISA version (CUDA 13.0's stops at 9.0, and Triton emits
9.4), so the first ptxas in that order that accepts the module's ``.version``
wins, and when none does the error says which versions were found and which one
is needed. Tools run without a shell, in their own process group, with a time
limit scaled to their input (:mod:`asmevo.process`).
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import tempfile
from pathlib import Path

from asmevo import knobs
from asmevo.memo import cached
from asmevo.targets.nvidia.errors import NvidiaError
from asmevo.process import describe_limit, exit_status, first_diagnostic, input_bytes, run_tool

PTXAS_NAMES = ("ptxas-blackwell", "ptxas")   # Triton ships the newer one as ptxas-blackwell
HINT = ("set ASMEVO_CUDA_BIN to a directory holding it (it ships in the triton wheel's "
        "backends/nvidia/bin and in CUDA's bin)")


class ToolError(NvidiaError):
    """A missing NVIDIA tool, or one that failed."""


class ToolMissing(ToolError):
    """A tool that is not installed, or no ptxas new enough for the PTX: a configuration
    error that stops the command once, never a candidate's verdict."""


def _candidates() -> list[Path]:
    dirs = []
    env = knobs.cuda_bin()
    if env:
        dirs.append(env)
    spec = importlib.util.find_spec("triton")
    if spec and spec.origin:
        dirs.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    home = knobs.cuda_home()
    if home:
        dirs.append(home / "bin")
    dirs += [Path(d) for d in sorted(glob.glob("/usr/local/cuda*/bin"), reverse=True)]
    return dirs


def _path_dirs() -> list[Path]:
    return [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep) if d]


def all_of(tool: str) -> list[Path]:
    """Every executable ``tool`` in lookup order (the same file once)."""
    out, seen = [], set()
    for d in [*_candidates(), *_path_dirs()]:
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                out.append(p)
    return out


@cached("targets.nvidia.tools.find", None)
def find(tool: str) -> Path:
    """The path of ``tool`` (nvdisasm, ptxas, cuobjdump)."""
    found = all_of(tool)
    if found:
        return found[0]
    raise ToolMissing(f"{tool} not found: {HINT}")


def run_exe(exe: Path, args: list[str], *, what: str = "") -> str:
    """Run ``exe args`` and return its stdout; a non-zero exit is a one-line ToolError."""
    cmd = [str(exe), *map(str, args)]
    name = Path(exe).name
    try:
        res = run_tool(cmd)
    except FileNotFoundError as exc:
        raise ToolMissing(f"{name} not found at {exe}: {HINT}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{name} {what or ' '.join(args)} timed out after "
                        f"{describe_limit(exc.timeout, input_bytes(cmd[1:]))}; it was killed"
                        ) from exc
    out = res.stdout.decode(errors="replace")
    if res.returncode != 0:
        err = res.stderr.decode(errors="replace") or out
        raise ToolError(f"{name} failed ({exit_status(res.returncode)}) on "
                        f"{what or ' '.join(args)}: {first_diagnostic(err)}", detail=err)
    return out


def run(tool: str, args: list[str], *, what: str = "") -> str:
    """Run ``tool args`` (found by :func:`find`) and return its stdout."""
    return run_exe(find(tool), args, what=what)


def version(tool: str) -> str:
    out = run(tool, ["--version"])
    return out.strip().splitlines()[-1] if out.strip() else ""


# -- ptxas by PTX version ----------------------------------------------------------

_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)
_TARGET = re.compile(r"^\s*\.target\s+([\w,\s]+?)\s*$", re.M)
_CURRENT = re.compile(r"current version is '(\d+\.\d+)'")


def ptx_version(ptx: str) -> tuple[int, int]:
    """The ``.version`` a PTX module declares."""
    m = _VERSION.search(ptx)
    if not m:
        raise ToolError("PTX has no .version directive")
    return int(m.group(1)), int(m.group(2))


@cached("targets.nvidia.tools._accepts", None)
def _accepts(exe: str, version: tuple[int, int], target: str) -> tuple[bool, str]:
    """Whether ``exe`` compiles an empty module of ``version``; else its newest version."""
    probe = f".version {version[0]}.{version[1]}\n.target {target}\n.address_size 64\n"
    with tempfile.TemporaryDirectory(prefix="asmevo_ptxas_") as tmp:
        src = Path(tmp) / "probe.ptx"
        src.write_text(probe)
        try:
            run_exe(Path(exe), [f"--gpu-name={target.split(',')[0].strip()}", str(src),
                                "-o", str(Path(tmp) / "probe.cubin")], what="a version probe")
            return True, ""
        except ToolError as exc:
            m = _CURRENT.search(exc.detail or exc.message)
            return False, (f"accepts PTX up to {m.group(1)}" if m else exc.message)


def _release(exe: Path) -> str:
    try:
        out = run_exe(exe, ["--version"])
    except ToolError:
        return "?"
    m = re.search(r"release (\d+\.\d+)", out)
    return f"CUDA {m.group(1)}" if m else "?"


def ptxas_for(ptx: str) -> Path:
    """The first ptxas (lookup order, ``ptxas-blackwell`` before ``ptxas`` in each
    place) that accepts ``ptx``'s ``.version``; a ToolError naming what was found."""
    want = ptx_version(ptx)
    m = _TARGET.search(ptx)
    target = m.group(1) if m else "sm_90a"
    tried = []
    for name in PTXAS_NAMES:
        for exe in all_of(name):
            ok, why = _accepts(str(exe), want, target)
            if ok:
                return exe
            tried.append(f"{exe} ({_release(exe)}) {why}")
    found = "; ".join(tried) if tried else "no ptxas found"
    raise ToolMissing(f"no ptxas accepts PTX {want[0]}.{want[1]} ({found}): set ASMEVO_CUDA_BIN "
                    "to a directory holding a newer ptxas (the triton wheel's "
                    "backends/nvidia/bin has the one its PTX was made with)")
