#!/usr/bin/env python3
"""Median recover + rebuild time of the largest corpus code object; or, with
``--sample DIR``, every stage a new K0 meets, over a systematic sample of a folder.

    python experiments/bench_roundtrip.py [--repeat 7] [FILE]
    python experiments/bench_roundtrip.py --sample DIR [--every K]

Recover = disassemble + label + encoding check; rebuild = print .s + llvm-mc +
ld.lld (build cache disabled). Ends with ``roundtrip_seconds=<median>``.

``--sample``: every K-th ``*.co`` of DIR's sorted list (recursive; K=1: all).
For each object: roundtrip (rebuild byte-identical?) and the route its
candidates take (rebuild, or patch: why), ``inspect``, the static gate over
every function of K0 (hazard + waitcnt problems found: a result, not a
verdict) and the emulator's decode report (instructions it refuses). Any
failure counts in ``failed=`` with its one-line reason; a traceback would stop
the script. Ends with ``objects=``, ``identical=``, ``patch_route=``,
``failed=``, ``inspect_ok=``, ``gate_ok=`` and ``decode_refused=``.
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


def _one(path: Path) -> dict:
    """Roundtrip, route, inspect, static gate and decode report of one object."""
    from asmevo.emu.isa.decode import decode_one
    from asmevo.targets.amdgpu.analysis.problems import AnalysisError
    from asmevo.targets.amdgpu.analysis.hazards import check_hazards
    from asmevo.targets.amdgpu.analysis.waitcnt import check_waitcnts
    from asmevo.targets.amdgpu.route import attach, decide
    from asmevo.targets.amdgpu.summary import kernel_summaries
    from asmevo.targets.amdgpu.toolchain import find_toolchain

    co = load(path)
    tc = find_toolchain(co.target.processor)
    program = recover(co, tc=tc)
    route, cmp = decide(program, tc=tc, cache=False)
    program = attach(program, route)
    sums = kernel_summaries(co, program, llvm=tc.describe())
    try:
        problems = sum(len(check_hazards(fn, co.target)) + len(check_waitcnts(fn))
                       for fn in program.functions)
    except AnalysisError as exc:
        problems = f"gate: {exc}"
    refused = 0
    for fn in program.functions:
        acc = fn.kernel.descriptor.accum_offset if fn.kernel else 0
        refused += sum(decode_one(i.text, index=k, address=i.address, kernel=fn.name,
                                  accum_offset=acc, processor=co.target.processor).ctl == "fault"
                       for k, i in enumerate(fn.instructions))
    return {"identical": bool(cmp and cmp.identical), "route": str(route),
            "patch": route.patch, "kernels": len(sums), "problems": problems,
            "refused": refused, "llvm": tc.describe()}


def sample(folder: Path, every: int) -> None:
    from asmevo.errors import AsmevoError
    files = sorted(folder.rglob("*.co"))[::every]
    n = ident = patch = failed = inspect_ok = gate_ok = refused = 0
    llvms = set()
    for f in files:
        n += 1
        try:
            r = _one(f)
        except AsmevoError as exc:
            failed += 1
            print(f"FAILED     {f.relative_to(folder)}: {exc}")
            continue
        ident += r["identical"]
        patch += r["patch"]
        inspect_ok += r["kernels"] > 0
        gate_ok += isinstance(r["problems"], int)
        refused += r["refused"]
        llvms.add(r["llvm"])
        print(f"{'IDENTICAL' if r['identical'] else 'DIFFERENT':10s} {f.relative_to(folder)}: "
              f"route {r['route'][:90]}; gate problems {r['problems']}; "
              f"emulator refuses {r['refused']}")
    print(f"llvm: {', '.join(sorted(llvms))}")
    print(f"identical_percent={100 * ident / max(n, 1):.1f}")
    for k, v in (("objects", n), ("identical", ident), ("patch_route", patch),
                 ("failed", failed), ("inspect_ok", inspect_ok), ("gate_ok", gate_ok),
                 ("decode_refused", refused)):
        print(f"{k}={v}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sample", type=Path, help="folder of code objects")
    ap.add_argument("--every", type=int, default=1, help="with --sample: every K-th file")
    args = ap.parse_args()
    if args.sample:
        return sample(args.sample, max(1, args.every))
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
