"""Where the NVIDIA binary tools (nvdisasm, ptxas, cuobjdump) are found, and running them.

Lookup order, first hit wins: ``$ASMEVO_CUDA_BIN`` (a directory), the tools bundled
in the ``triton`` wheel (``triton/backends/nvidia/bin``), ``$CUDA_HOME/bin``,
``/usr/local/cuda*/bin`` (newest first), then ``PATH``. A tool that is nowhere
raises one :class:`ToolError` that names the variable to set. Tools run without
a shell, with a time limit.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from asmevo import knobs
from asmevo.errors import AsmevoError

TIMEOUT_S = 120


class ToolError(AsmevoError):
    """A missing NVIDIA tool, or one that failed."""


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


@functools.cache
def find(tool: str) -> Path:
    """The path of ``tool`` (nvdisasm, ptxas, cuobjdump)."""
    for d in _candidates():
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            return p
    which = shutil.which(tool)
    if which:
        return Path(which)
    raise ToolError(f"{tool} not found: set ASMEVO_CUDA_BIN to a directory holding it "
                    "(it ships in the triton wheel's backends/nvidia/bin and in CUDA's bin)")


def run(tool: str, args: list[str], *, what: str = "") -> str:
    """Run ``tool args`` and return its stdout; a non-zero exit is a ToolError."""
    exe = find(tool)
    try:
        res = subprocess.run([str(exe), *args], check=False, capture_output=True, text=True,
                             timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{tool} {what or ' '.join(args)} timed out after {TIMEOUT_S} s") from exc
    if res.returncode != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()
        raise ToolError(f"{tool} failed ({res.returncode}) on {what or ' '.join(args)}: "
                        + (msg[-1] if msg else "no message"))
    return res.stdout


def version(tool: str) -> str:
    out = run(tool, ["--version"])
    return out.strip().splitlines()[-1] if out.strip() else ""
