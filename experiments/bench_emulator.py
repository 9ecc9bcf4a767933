"""Emulator throughput: lane-instructions per second on the corpus' big launches.

    python experiments/bench_emulator.py [--n-log2 22] [--skip-softmax]

Prints one line per launch, then ``timing_matmul_4096_seconds=<s>`` (the timing model at a
GPU size: the naive HIP matmul at M = N = K = 4096, 65,536 workgroups, timed cold by
``model_launch``: emulation of the busiest CU's first rounds and the steady state
extrapolated) and ``timing_million_waves_seconds=<s>`` (vector_add over 2**26 elements:
1,048,576 waves), ``softmax_1024_seconds=<s>`` (a 1024 x 1024
softmax, HIP kernel), ``small_launch_seconds=<s>`` (the fixed cost of launching a
code object this process has not run before, as verification does with every
candidate: vector_add over 1,000 elements, each time K0 with another pair of
independent instructions swapped; the emulator decodes it, replaying what it
learned from K0, and launches it; median wall seconds) and last
``lane_instr_per_s=<value>`` for vector_add over 2**n elements (the streaming
elementwise case the emulator is tuned for).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asmevo.emu import Emulator  # noqa: E402
from asmevo.launch.spec import load_spec, make_inputs  # noqa: E402

KERNELS = ROOT / "experiments" / "kernels"


def resized(spec, grid, counts: dict[str, int], scalars: dict[str, int],
            params: dict[str, int] | None = None):
    """``spec`` at another size (``params``: the size parameters a reference reads)."""
    args = tuple(dataclasses.replace(a, count=counts.get(a.name, a.count),
                                     value=scalars.get(a.name, a.value)) for a in spec.args)
    return dataclasses.replace(spec, grid=grid, args=args,
                               params={**spec.params, **(params or {})})


def run(name: str, spec, check: bool = True) -> tuple[float, int]:
    emu = Emulator(spec.code_object)
    inputs = make_inputs(spec, 0)
    t0 = time.perf_counter()
    res = emu.launch(spec, inputs, max_instructions=10**12)
    dt = time.perf_counter() - t0
    res.raise_for_status()
    if check:
        ref = spec.expected(inputs)
        for k, want in ref.items():
            got = res.outputs[k].astype(np.float64)
            tol = spec.atol + spec.rtol * np.abs(want)
            if not np.all(np.abs(got - want) <= tol):
                raise SystemExit(f"{name}: output {k} does not match the reference")
    print(f"{name}: {dt:.2f} s, {res.waves} waves, {res.instructions_executed} wave-instr, "
          f"{res.lane_instructions} lane-instr, {res.lane_instructions / dt / 1e6:.1f} M lane-instr/s")
    return dt, res.lane_instructions


def small_launch(count: int) -> float:
    """Median wall seconds of Emulator(bytes) + one launch of vector_add over 1,000
    elements, for ``count`` candidates (K0 with one independent pair swapped)."""
    import statistics

    from asmevo.edits import Edit
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.targets.amdgpu.edits import apply_edits
    from asmevo.targets.amdgpu.registers import register_ranges

    n = 1000
    va = load_spec(KERNELS / "vector_add" / "spec.toml", "small")
    va = resized(va, (-(-n // 256), 1, 1), {"a": n, "b": n, "c": n}, {"n": n})
    inputs = make_inputs(va, 0)
    k0 = load(va.code_object)
    program = recover(k0)
    ins = program.function(va.kernel).instructions
    cands = []
    for i in range(len(ins) - 1):
        a, b = ins[i], ins[i + 1]
        regs = [{(r.kind, x) for r in register_ranges(t.operands) for x in r} for t in (a, b)]
        if a.text != b.text and not (regs[0] & regs[1]) and not any(
                t.mnemonic.startswith(("s_cbranch", "s_branch", "s_endpgm")) for t in (a, b)):
            cands.append(build_program(apply_edits(program, (
                Edit(va.kernel, i, i + 2, (b.text, a.text)),))))
    t0 = time.perf_counter()
    Emulator(k0.data).launch(va, inputs).raise_for_status()
    print(f"vector_add 1000: first launch in this process {time.perf_counter() - t0:.3f} s "
          f"(K0, cold); {len(cands[:count])} candidates follow")
    times = []
    for data in cands[:count]:
        t0 = time.perf_counter()
        res = Emulator(data).launch(va, inputs)
        times.append(time.perf_counter() - t0)
        res.raise_for_status()
    return statistics.median(times)


def timing_large(name: str, spec) -> float:
    """Wall seconds of one cold ``model_launch`` of ``spec`` (decoding included)."""
    from asmevo.timing import model as T

    T._CACHE.clear()
    T._TRACES.clear()
    t0 = time.perf_counter()
    m = T.model_launch(spec.code_object.read_bytes(), spec, {})
    dt = time.perf_counter() - t0
    print(f"{name}: modeled {m.seconds * 1e6:.0f} us (modeled), {m.workgroups} workgroups, "
          f"{m.waves} waves; {m.simulated_workgroups} of the busiest CU's {m.cu_workgroups} "
          f"simulated (steady {m.steady}); {dt:.1f} s")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-log2", type=int, default=22)
    ap.add_argument("--skip-softmax", action="store_true")
    ap.add_argument("--small-candidates", type=int, default=9)
    ap.add_argument("--skip-timing", action="store_true")
    a = ap.parse_args()
    if not a.skip_timing:
        mm = load_spec(ROOT / "experiments" / "kernels_naive" / "matmul" / "spec.toml", "large")
        k = 4096
        mm = resized(mm, (k // 16, k // 16, 1), {"A": k * k, "B": k * k, "C": k * k},
                     {"M": k, "N": k, "K": k}, {"M": k, "N": k, "K": k})
        print(f"timing_matmul_4096_seconds={timing_large('naive matmul 4096^3', mm):.1f}")
        n = 1 << 26
        va = load_spec(KERNELS / "vector_add" / "spec.toml", "small")
        va = resized(va, (n // 256, 1, 1), {"a": n, "b": n, "c": n}, {"n": n})
        print(f"timing_million_waves_seconds={timing_large('vector_add 2^26', va):.1f}")
    if not a.skip_softmax:
        sm = load_spec(KERNELS / "softmax" / "spec.toml", "small")
        sm = resized(sm, (1024, 1, 1), {"x": 1024 * 1024, "y": 1024 * 1024}, {"cols": 1024},
                     {"ROWS": 1024, "COLS": 1024})
        dt, _ = run("softmax 1024x1024", sm)
        print(f"softmax_1024_seconds={dt:.3f}")
    dt = small_launch(a.small_candidates)
    print(f"small_launch_seconds={dt:.4f}")
    n = 1 << a.n_log2
    va = load_spec(KERNELS / "vector_add" / "spec.toml", "small")
    va = resized(va, (-(-n // 256), 1, 1), {"a": n, "b": n, "c": n}, {"n": n})
    dt, lanes = run(f"vector_add 2^{a.n_log2}", va)
    print(f"lane_instr_per_s={lanes / dt:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
