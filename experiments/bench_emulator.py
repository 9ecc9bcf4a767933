"""Emulator throughput: lane-instructions per second on the corpus' big launches.

    python experiments/bench_emulator.py [--n-log2 22] [--skip-softmax]

Prints one line per launch, then ``softmax_1024_seconds=<s>`` (a 1024 x 1024
softmax, HIP kernel) and last ``lane_instr_per_s=<value>`` for vector_add over
2**n elements (the streaming elementwise case the emulator is tuned for).
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
from asmevo.verify.spec import load_spec, make_inputs  # noqa: E402

KERNELS = ROOT / "experiments" / "kernels"


def resized(spec, grid, counts: dict[str, int], scalars: dict[str, int]):
    args = tuple(dataclasses.replace(a, count=counts.get(a.name, a.count),
                                     value=scalars.get(a.name, a.value)) for a in spec.args)
    return dataclasses.replace(spec, grid=grid, args=args)


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-log2", type=int, default=22)
    ap.add_argument("--skip-softmax", action="store_true")
    a = ap.parse_args()
    if not a.skip_softmax:
        sm = load_spec(KERNELS / "softmax" / "spec.toml", "small")
        sm = resized(sm, (1024, 1, 1), {"x": 1024 * 1024, "y": 1024 * 1024}, {"cols": 1024})
        dt, _ = run("softmax 1024x1024", sm)
        print(f"softmax_1024_seconds={dt:.3f}")
    n = 1 << a.n_log2
    va = load_spec(KERNELS / "vector_add" / "spec.toml", "small")
    va = resized(va, (-(-n // 256), 1, 1), {"a": n, "b": n, "c": n}, {"n": n})
    dt, lanes = run(f"vector_add 2^{a.n_log2}", va)
    print(f"lane_instr_per_s={lanes / dt:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
