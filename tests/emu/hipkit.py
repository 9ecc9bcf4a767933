"""HIP snippets compiled by the real clang (gfx942/gfx90a, any -O level) and run on the
emulator, for tests that check whole instruction sequences against IEEE results.

    out = run_hip(SRC, "k", {"a": a, "y": np.zeros(n, np.float32)}, n=len(a))
    out["y"]
"""
from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from asmevo.emu import run_launch
from asmevo.launch.spec import ArgSpec, LaunchSpec

HEADER = Path(__file__).resolve().parents[2] / "experiments" / "kernels" / "hip_min.h"
_CACHE = Path(tempfile.gettempdir()) / "asmevo-test-hip"


def find_clang() -> Path:
    """clang with the AMDGPU target (the toolchain's lookup); skips where none is installed."""
    from asmevo.targets.amdgpu.toolchain import ToolchainError, find_clang as find
    try:
        return find()
    except ToolchainError as exc:
        pytest.skip(str(exc))


def compile_hip(src: str, arch: str = "gfx942", opt: str = "O2", extra=()) -> Path:
    """Compile ``src`` (hip_min.h included) to a code object; cached by content."""
    clang = find_clang()
    text = f'#include "{HEADER}"\n{src}'
    key = hashlib.sha256(f"{text}|{arch}|{opt}|{extra}|{clang}".encode()).hexdigest()[:20]
    _CACHE.mkdir(exist_ok=True)
    out = _CACHE / f"{key}.co"
    if not out.exists():
        hip = _CACHE / f"{key}.hip"
        hip.write_text(text)
        tmp = _CACHE / f"{key}.tmp.co"
        subprocess.run([str(clang), "-x", "hip", f"--offload-arch={arch}", "-nogpulib",
                        "-nogpuinc", "--cuda-device-only", "--no-gpu-bundle-output", f"-{opt}",
                        "-std=c++17", *extra, str(hip), "-o", str(tmp)], check=True)
        tmp.replace(out)
    return out


def run_hip(src: str, kernel: str, buffers: dict[str, np.ndarray], *, n: int,
            scalars: dict[str, int] | None = None, arch: str = "gfx942", opt: str = "O2",
            block: int = 64, approx_variant: int = 0, order: list[str] | None = None,
            expect: str = "ok", dynamic_stack: int = 0, **launch):
    """Launch ``kernel`` over ``n`` work-items; arguments in ``order`` (default: buffers
    then scalars, as declared). Returns the buffers' final contents (or the result
    when ``expect`` is not "ok")."""
    co = compile_hip(src, arch, opt)
    scalars = scalars or {}
    names = order or [*buffers, *scalars]
    args = []
    for name in names:
        if name in buffers:
            a = buffers[name]
            args.append(ArgSpec(name=name, kind="buffer", dtype=str(a.dtype), count=a.size))
        else:
            args.append(ArgSpec(name=name, kind="scalar", dtype="int32", value=scalars[name]))
    spec = LaunchSpec(name=kernel, kernel=kernel, code_object=co,
                      grid=(-(-n // block), 1, 1), block=(block, 1, 1), args=tuple(args),
                      dynamic_stack=dynamic_stack)
    res = run_launch(co, spec, dict(buffers), approx_variant=approx_variant, **launch)
    if expect != "ok":
        return res
    assert res.status == "ok", res.message
    return res.outputs
