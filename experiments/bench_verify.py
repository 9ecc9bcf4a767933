#!/usr/bin/env python3
"""Seconds to verify one candidate of a typical corpus kernel on the emulator.

    python experiments/bench_verify.py [--spec experiments/kernels/softmax] [--repeat 5]

A candidate = K0 with one semantics-preserving edit (two independent
instructions swapped), so nothing is served from a cache: build, static gate,
ABI check, and the differential run (3 seeded input sets with scalar draws + the
special-value sets: scattered, whole rows, rows at an interior scalar value; the
candidate run twice per set, in an isolated child process). K0's reference
runs are computed once per process, as in a search, and reported separately.
Also prints the load average and ``cpu_seconds_per_candidate=`` (median CPU time of
this process and of the evaluating worker process together: on a shared machine wall
time mostly measures the other users) and ``first_candidate_seconds=`` (the first
candidate also starts the evaluating worker, which sets up K0's state and the emulator's
checkpoints of K0's pass). Ends with ``seconds_per_candidate=<median>`` (wall).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    """CPU seconds of this process, its waited-for children and the evaluating worker
    (a forked child that serves many candidates: read from /proc while it lives)."""
    from asmevo.verify.isolate import _WORKERS
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    for w in _WORKERS.values():
        proc = getattr(w, "_proc", None)
        if proc is not None and proc.pid:
            try:
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "experiments" / "kernels" / "softmax"))
    ap.add_argument("--size", default="small")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--proof", choices=("on", "off"), default="on",
                    help="the prove stage after the differential (on where z3 is installed)")
    args = ap.parse_args()
    if args.repeat < 1:
        print("bench_verify: --repeat must be >= 1", file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("ASMEVO_CACHE_DIR", tempfile.mkdtemp(prefix="asmevo-bench-"))

    from asmevo.edits import Edit
    from asmevo.verify.evaluate import EvalContext, evaluate_candidate, k0_state

    from asmevo.errors import AsmevoError

    ctx = EvalContext(spec_path=args.spec, size=args.size, timing="none", proof=args.proof)
    t0 = time.perf_counter()
    try:
        st = k0_state(ctx)
    except (AsmevoError, OSError) as exc:    # a bad spec or kernel: one line, exit 2
        print(f"bench_verify: {exc}", file=sys.stderr)
        sys.exit(2)
    ref_s = time.perf_counter() - t0
    fn = st.program.function(st.spec.kernel)
    ins = fn.instructions
    # distinct candidates: swap the i-th pair of adjacent VALU instructions that do not
    # touch each other's registers (a reordering the verifier must accept)
    from asmevo.targets.amdgpu.registers import register_ranges
    pairs = []
    for i in range(len(ins) - 1):
        a, b = ins[i], ins[i + 1]
        if not (a.mnemonic.startswith("v_") and b.mnemonic.startswith("v_")):
            continue
        if "vcc" in a.operands + b.operands:
            continue
        ra = {(r.kind, n) for r in register_ranges(a.operands) for n in r}
        rb = {(r.kind, n) for r in register_ranges(b.operands) for n in r}
        if not ra & rb:
            pairs.append(i)
    times, cpus, verdicts = [], [], []
    for i in pairs[:args.repeat]:
        edit = Edit(st.spec.kernel, i, i + 2, (ins[i + 1].text, ins[i].text))
        c = _cpu()
        t = time.perf_counter()
        ev = evaluate_candidate(ctx, (edit,))
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
        verdicts.append(ev.verdict.status)
    if not times:
        sys.exit("no independent adjacent VALU pair found in this kernel")
    print(f"kernel: {st.spec.kernel} ({args.size}), {len(ins)} instructions, "
          f"{len(st.reference.results)} input sets (+{len(st.reference.skipped)} skipped)")
    print(f"k0_reference_seconds={ref_s:.3f}")
    print(f"candidates={len(times)} verdicts={','.join(verdicts)}")
    print(f"min={min(times):.3f}s max={max(times):.3f}s mean={statistics.mean(times):.3f}s "
          f"load average {os.getloadavg()[0]:.1f}")
    # the first candidate also starts the evaluating worker, which sets up K0's state
    # there (and the emulator's checkpoints of K0's pass, asmevo.emu.run.converge)
    print(f"first_candidate_seconds={times[0]:.3f}")
    print(f"cpu_seconds_per_candidate={statistics.median(cpus):.3f}")
    if len(cpus) > 2:   # the clock ticks 10 ms apart: the mean past the first is finer
        print(f"cpu_seconds_per_candidate_mean={statistics.mean(cpus[1:]):.4f}")
    print(f"seconds_per_candidate={statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
