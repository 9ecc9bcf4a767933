#!/usr/bin/env python3
"""Median recover + rebuild time of the largest corpus code object.

    python experiments/bench_roundtrip.py [--repeat 7] [FILE]

Recover = disassemble + label + encoding check; rebuild = print .s + llvm-mc +
ld.lld (build cache disabled). Ends with ``roundtrip_seconds=<median>``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asmevo.targets.amdgpu import load, recover  # noqa: E402
from asmevo.targets.amdgpu.build import build_program  # noqa: E402
from asmevo.targets.amdgpu.roundtrip import compare  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.file:
        path = Path(args.file)
    else:
        objs = sorted((ROOT / "experiments" / "kernels").glob("*/*.co"))
        path = max(objs, key=lambda p: load(p).text.size)
    co = load(path)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rebuilt = build_program(recover(co), cache=False)
        times.append(time.perf_counter() - t0)
    assert compare(co, load(rebuilt)).identical
    n = sum(len(f.instructions) for f in recover(co).functions)
    print(f"object: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    print(f"text_bytes={co.text.size}")
    print(f"instructions={n}")
    print(f"runs={args.repeat} min={min(times):.4f}s max={max(times):.4f}s")
    print(f"roundtrip_seconds={statistics.median(times):.4f}")


if __name__ == "__main__":
    main()
