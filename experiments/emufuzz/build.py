"""Compile one batch source for every GPU target and opt level, and for x86-64.

clang's start-up and front end are paid once per invocation, so a batch holds
many programs and one invocation builds every GPU target of one opt level
(``--offload-arch`` repeated, ``--no-gpu-bundle-output``). The flags keep both
sides IEEE: no contraction (HIP's default is ``fast-honor-pragmas``), no
errno-bound math, f16 rounded after every operation on x86 (clang's default
there is to keep f16 expressions in f32). The x86 reference is built at -O0, the
most literal translation of the source: at -O1/-O2, clang-19's x86 code for one
batch computed w_fmin(-0.0, +0.0) as +0.0 in one kernel (seed 5000 program 1199,
lane 24; the same program alone, or the batch at -O0, gives the -0.0 that the
source and every GPU build give), so an optimized reference can be the side that
is wrong. Tools run without a shell; each compile is timed.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent / "kernels"          # hip_min.h
DEFAULT_CLANG = Path("/usr/lib/llvm-19/bin/clang")
TARGETS = ("gfx942", "gfx90a")
OPTS = ("O0", "O1", "O2", "O3")
COMPILE_TIMEOUT = 600

GPU_FLAGS = ["-x", "hip", "-std=c++17", "-w", "-nogpulib", "-nogpuinc", "--cuda-device-only",
             "--no-gpu-bundle-output", "-ffp-contract=off", "-fno-math-errno",
             "-cuid=emufuzz", f"-I{HERE}", f"-I{KERNELS}"]
HOST_FLAGS = ["-x", "c++", "-std=c++17", "-w", "-O0", "-ffp-contract=off", "-fno-math-errno",
              "-Xclang", "-ffloat16-excess-precision=none", "-shared", "-fPIC",
              "-Wl,-z,defs", f"-I{HERE}"]


class BuildError(Exception):
    """clang refused or crashed on a batch (the message holds its last lines)."""


def clang_path(cli: str | None = None) -> Path:
    """--clang, else $ASMEVO_EMUFUZZ_CLANG, else llvm-19's clang (what the corpus uses)."""
    p = Path(cli or os.environ.get("ASMEVO_EMUFUZZ_CLANG") or DEFAULT_CLANG)
    if not p.exists():
        raise BuildError(f"{p} not found: pass --clang or set ASMEVO_EMUFUZZ_CLANG")
    return p


@dataclass
class Built:
    """Where a batch's objects are, what failed, and what each compile cost."""

    dir: Path
    objects: dict[tuple[str, str], Path] = field(default_factory=dict)   # (target, opt)
    host: Path | None = None
    errors: dict[str, str] = field(default_factory=dict)                 # opt or "x86"
    seconds: dict[str, float] = field(default_factory=dict)


def _run(cmd: list[str], cwd: Path) -> str | None:
    """None on success, else the tail of clang's output."""
    try:
        res = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                             timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"timed out after {COMPILE_TIMEOUT} s"
    if res.returncode != 0:
        tail = (res.stdout + res.stderr).strip().splitlines()[-6:]
        return f"exit {res.returncode}: " + " | ".join(tail)
    return None


def build(source: str, workdir: Path, *, targets=TARGETS, opts=OPTS, clang: Path | None = None,
          host: bool = True) -> Built:
    """Write ``source`` to ``workdir/batch.cpp`` and compile it (missing objects -> errors)."""
    clang = clang or clang_path()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "batch.cpp").write_text(source)
    out = Built(workdir)
    for opt in opts:
        t0 = time.perf_counter()
        err = _run([clang, *GPU_FLAGS, f"-{opt}", *(f"--offload-arch={t}" for t in targets),
                    "batch.cpp"], workdir)
        out.seconds[opt] = time.perf_counter() - t0
        for t in targets:
            made = workdir / f"batch-hip-amdgcn-amd-amdhsa-{t}.out"
            if err is None and made.exists():
                dst = workdir / f"batch.{t}.{opt}.co"
                made.replace(dst)
                out.objects[(t, opt)] = dst
        if err is not None:
            out.errors[opt] = err
    if host:
        t0 = time.perf_counter()
        err = _run([clang, *HOST_FLAGS, "batch.cpp", "-o", "batch.so", "-lm"], workdir)
        out.seconds["x86"] = time.perf_counter() - t0
        if err is None:
            out.host = workdir / "batch.so"
        else:
            out.errors["x86"] = err
    return out
