"""Build a HIP kernel for an AMD GPU without ROCm: clang and the header shipped here.

``include/hip/hip_runtime.h`` is the device side of HIP written on clang builtins (types,
work-item ids incl. ``gridDim``, barriers, shuffles, atomics, float math): with it, plain
clang (LLVM >= 19, Debian's clang-19) compiles a kernel source to a code object,
device-only, with no ROCm device library. The flags are those of the corpus
(experiments/build_corpus.py) plus ``-fhip-kernel-arg-name``, so the metadata names each
argument and ``asmevo spec init`` can use the names.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from asmevo.process import first_diagnostic, run_tool
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_clang

INCLUDE = Path(__file__).with_name("include")     # holds hip/hip_runtime.h
HIP_TIMEOUT_S = 300.0


def hip_command(clang: Path, source: Path, out: Path, arch: str = P.DEFAULT,
                defines: tuple[str, ...] = (), includes: tuple[str, ...] = (),
                opt: str = "3") -> list[str]:
    """The clang command line (an argument list: no shell) that builds ``source``."""
    return ([str(clang), "-x", "hip", f"--offload-arch={arch}", "-nogpulib", "-nogpuinc",
             "--cuda-device-only", "--no-gpu-bundle-output", f"-O{opt}", "-std=c++17",
             "-fhip-kernel-arg-name", f"-cuid=asmevo_{source.stem}",  # else a hash of the path
             "-I", str(INCLUDE)]
            + [f"-I{d}" for d in includes] + [f"-D{d}" for d in defines]
            + [str(source), "-o", str(out)])


def build_hip(source: Path, out: Path, arch: str = P.DEFAULT, defines: tuple[str, ...] = (),
              includes: tuple[str, ...] = (), opt: str = "3") -> list[str]:
    """Compile ``source`` to the code object ``out``; the command it ran. A compile error
    is a :class:`ToolchainError` with clang's first error (all of it in ``detail``)."""
    clang = find_clang(arch)
    cmd = hip_command(clang, source, out, arch, defines, includes, opt)
    try:
        done = run_tool(cmd, timeout=HIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"clang did not finish within {HIP_TIMEOUT_S:.0f} s",
                             path=str(source)) from None
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace")
        raise ToolchainError(f"clang failed: {first_diagnostic(err)}", path=str(source),
                             detail=err)
    return cmd
