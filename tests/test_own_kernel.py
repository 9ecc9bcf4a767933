"""docs/own_kernel.md, end to end, as a user types it: a HIP kernel built without ROCm, its
spec from `spec init` to `spec check`, `emulate --check`, a search, `report`, `best`, and
the exported K1 verified against K0."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "own_kernel"


def asmevo(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "asmevo", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, (r.args, r.stdout[-2000:], r.stderr[-2000:])
    return r.stdout


def test_the_guides_example_end_to_end(tmp_path):
    work = tmp_path / "bias_gelu"
    work.mkdir()
    for name in ("bias_gelu.hip", "reference.py", "search.toml"):
        shutil.copy(GUIDE / name, work / name)

    # 1. build: <hip/hip_runtime.h> is asmevo's (size_t, gridDim and tanhf in this kernel)
    out = ok(asmevo(work, "hip", "bias_gelu.hip"))
    assert "kernels: bias_gelu" in out and (work / "bias_gelu.gfx942.co").is_file()

    # 2. the skeleton names the arguments as the source does, and is not yet a spec
    skeleton = ok(asmevo(work, "spec", "init", "bias_gelu.gfx942.co"))
    for arg in ("x", "bias", "y", "rows", "cols"):
        assert f'name = "{arg}"' in skeleton
    assert "[family]" in skeleton and "TODO" in skeleton
    (work / "skeleton.toml").write_text(skeleton)
    r = asmevo(work, "spec", "check", "skeleton.toml")
    assert r.returncode == 2 and "TODO" in (r.stdout + r.stderr)

    # 3. the filled-in spec (the guide's): checked, and K0 matches the reference
    shutil.copy(GUIDE / "spec.toml", work / "spec.toml")
    assert "ok" in ok(asmevo(work, "spec", "check", "spec.toml"))
    out = ok(asmevo(work, "emulate", "spec.toml", "--check"))
    assert "y: matches the reference" in out

    # 4. search, report (with why operators proposed nothing), best, and K1 verified
    out = ok(asmevo(work, "run", "search.toml", "--run-dir", "runs/bias_gelu"))
    assert "finished" in out
    report = ok(asmevo(work, "report", "runs/bias_gelu"))
    assert "== why operators proposed nothing ==" in report and "unroll" in report
    out = ok(asmevo(work, "best", "runs/bias_gelu", "--out", "K1.co"))
    assert (work / "K1.co").is_file() and (work / "K1.co.json").is_file()
    out = ok(asmevo(work, "verify", "spec.toml", "bias_gelu.gfx942.co", "K1.co"))
    assert "equal" in out


def test_the_shipped_header_builds_what_typical_kernels_use(tmp_path):
    """Every part of the header compiled into one kernel (a grid-stride loop over the math
    functions, a warp shuffle reduction, LDS, a barrier and atomics), and a compile error
    as one line."""
    src = tmp_path / "parts.hip"
    src.write_text("""
#include <hip/hip_runtime.h>
extern "C" __global__ __launch_bounds__(256) void parts(const float* x, float* out,
                                                         uint32_t* count, int64_t n) {
  float acc = 0.0f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)n;
       i += (size_t)gridDim.x * blockDim.x) {
    float v = x[i];
    acc += tanhf(v) + expf(v) + logf(fabsf(v) + 1.0f) + sqrtf(fabsf(v)) + erff(v)
         + powf(fabsf(v) + 1.0f, 0.5f) + fminf(v, 0.0f) + fmaxf(v, 0.0f) + sinf(v) + cosf(v)
         + floorf(v) + __expf(v) + rsqrtf(fabsf(v) + 1.0f) + exp2f(v) + log2f(fabsf(v) + 1.0f);
  }
  for (int o = warpSize / 2; o > 0; o /= 2) acc += __shfl_xor(acc, o);
  __shared__ float part[4];
  if (__lane_id() == 0) part[threadIdx.x / warpSize] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(out, part[0] + part[1] + part[2] + part[3]);
    atomicAdd(count, 1u);
  }
}
""")
    ok(asmevo(tmp_path, "hip", "parts.hip", "--out", "parts.co"))
    out = ok(asmevo(tmp_path, "inspect", "parts.co"))
    assert "parts" in out
    r = asmevo(tmp_path, "hip", "--include-dir")
    assert (Path(ok(r).strip()) / "hip" / "hip_runtime.h").is_file()
    # a compile error is one line naming the file, exit 2
    (tmp_path / "bad.hip").write_text('#include <hip/hip_runtime.h>\nint f( {\n')
    r = asmevo(tmp_path, "hip", "bad.hip")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.hip" in r.stderr
