#!/usr/bin/env python3
"""Candidates finished as K0's (asmevo.emu.run.converge) against their passes run to the end,
field by field, on the corpus and on the differential fuzzer's programs.

    python experiments/bench_converge.py [--corpus] [--fuzz N] [--per-kernel 8] [--seed S]
        [--targets gfx942,gfx90a] [--opts O1,O2] [--batch 40] [--jobs 1] [--no-cost-test]

For every kernel: candidates made through the edit path (apply, static gate, rebuild)
by swapping two adjacent instructions at rows spread over the kernel, whether or not
the swap keeps the kernel's function (a wrong candidate must come out as the full pass
gives it too), and by swapping back-to-back rows that name the same register. Each
candidate's launches (those of a candidate check: every input set, garbage variants,
serial schedules, approximate member 1; the fuzzer's five launches) run twice through
asmevo.emu.run.batch.launch_many: once to the end, once with K0 as ``like``. The results
must agree in every field bench_fastpath compares (status, message, outputs, guards,
per-row profile, counts, fault addresses, out-of-contract notes). Ends with
``objects=``, ``candidates=``, ``converged=`` / ``diverged=`` / ``declined=`` (how the
passes with ``like`` went: K0's future taken / states apart at the checkpoint / not
tried: other lengths, a changed row K0 runs again, too late a checkpoint, or the cost
test), ``declined_cost=`` (of the declined, those the cost test alone declined: a
comparison priced above the pass it would save; a timing, so these counts move with the
machine's load and with the emulator's speed), ``converged_time_ratio=`` (median, over
converged candidates, of their launches' time with ``like`` against without; K0's
checkpoints are made before the first candidate) and ``disagreements=``.
``--no-cost-test`` compares wherever a checkpoint allows (converge.COMPARE_MARGIN 0): the
counts are then a function of the code alone.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from bench_fastpath import (corpus_requests, differences, fuzz_arguments,  # noqa: E402
                            fuzz_launches)


def candidates(data: bytes, kernel: str, per_kernel: int, seed: int) -> list[bytes]:
    """Code objects K0 (``data``) with two adjacent rows of ``kernel`` swapped: rows spread
    over the kernel, and pairs that share a register (often a wrong candidate)."""
    from asmevo.edits import Edit
    from asmevo.targets import get_target
    from asmevo.targets.amdgpu.registers import register_ranges
    from asmevo.verify.pipeline import candidate
    target = get_target("amdgpu")
    co = target.load(data, path="K0")
    program = target.recover(co)
    ins = program.function(kernel).instructions
    rng = random.Random(seed)
    spread = list(range(0, max(len(ins) - 1, 0), max(1, (len(ins) - 1) // max(per_kernel, 1))))
    deps = [i for i in range(len(ins) - 1)
            if {(r.kind, n) for r in register_ranges(ins[i].operands) for n in r}
            & {(r.kind, n) for r in register_ranges(ins[i + 1].operands) for n in r}]
    rows = spread[:per_kernel] + rng.sample(deps, min(len(deps), max(1, per_kernel // 4)))
    out = []
    for i in rows:
        a, b = ins[i], ins[i + 1]
        if a.text == b.text:
            continue
        try:
            _, built, verdict = candidate(target, program,
                                          (Edit(kernel, i, i + 2, (b.text, a.text)),), co,
                                          kernel=kernel)
        except Exception:   # noqa: BLE001 - an edit the target refuses outright
            continue
        if built is not None and built != data:
            out.append(built)
    return out


def check(k0: bytes, spec, requests, cands: list[bytes], **kw) -> dict:
    """Each candidate's launches with K0 as ``like`` against without."""
    from asmevo.emu.run import converge
    from asmevo.emu.run.batch import launch_many
    from asmevo.emu.run.launch import emulator_for
    like = emulator_for(k0)
    out = {"candidates": 0, "converged": 0, "diverged": 0, "declined": 0,
           "declined_cost": 0, "bad": [], "ratios": []}
    if cands:       # K0's own checkpoints first (once per K0 and launches, as in a search)
        launch_many(like, spec, requests, like=like, **kw)
    for data in cands:
        emu = emulator_for(data)
        before = dict(converge.STATS)
        t = time.perf_counter()
        got = launch_many(emu, spec, requests, like=like, **kw)
        t1 = time.perf_counter()
        full = launch_many(emu, spec, requests, **kw)
        t2 = time.perf_counter()
        if got is None or full is None:
            if (got is None) != (full is None):
                out["bad"].append("one pass gave up and the other did not")
            continue
        out["candidates"] += 1
        outcome = next((k for k in ("converged", "diverged", "declined")
                        if converge.STATS[k] > before[k]), "declined")
        out[outcome] += 1
        out["declined_cost"] += converge.STATS["declined_cost"] > before["declined_cost"]
        if outcome == "converged":
            out["ratios"].append((t1 - t) / (t2 - t1))
        for i, (a, b) in enumerate(zip(full, got)):
            d = differences(a, b)
            if d:
                out["bad"].append(f"launch {i}: {', '.join(d)}")
    return out


def run_corpus(per_kernel: int, seed: int) -> list[tuple[str, dict]]:
    from asmevo.launch.spec import load_spec
    rows = []
    for d in sorted((ROOT / "experiments" / "kernels").iterdir()):
        if not (d / "spec.toml").exists():
            continue
        spec = load_spec(d, "small")
        for path in [spec.code_object, *spec.code_objects.values()]:
            k0 = path.read_bytes()
            got = check(k0, spec, corpus_requests(spec),
                        candidates(k0, spec.kernel, per_kernel, seed))
            rows.append((f"{d.name} {path.name}", got))
            _show(rows[-1])
    return rows


def _fuzz_batch(args) -> list[tuple[str, dict]]:
    seed, start, count, targets, opts, per_kernel, margin = args
    from asmevo.emu.run import converge
    converge.COMPARE_MARGIN = margin    # a worker started by spawn has the default
    from experiments.emufuzz.build import build
    from experiments.emufuzz.generate import generate
    from experiments.emufuzz.render import batch_source
    programs = [generate(seed, start + k) for k in range(count)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="converge-") as tmp:
        built = build(batch_source(programs), Path(tmp), targets=targets, opts=opts, host=False)
        for (target, opt), path in sorted(built.objects.items()):
            k0 = path.read_bytes()
            for p in programs:
                spec, reqs, budget = fuzz_launches(p)
                try:
                    cands = candidates(k0, spec.kernel, per_kernel, seed + start)
                    got = check(k0, spec, reqs, cands, max_instructions=budget)
                except Exception as exc:    # noqa: BLE001 - a kernel that does not load
                    got = {"candidates": 0, "converged": 0, "diverged": 0, "declined": 0,
                           "declined_cost": 0,
                           "bad": [] if "no code for kernel" in str(exc) else
                           [f"raised {type(exc).__name__}: {exc}"], "ratios": []}
                rows.append((f"{p.name} {target}-{opt}", got))
    return rows


def _show(row) -> None:
    name, got = row
    print(f"{name:48s} {got['candidates']:3d} candidates, {got['converged']} converged, "
          f"{got['diverged']} diverged, {got['declined']} declined"
          f"{' (%d by cost)' % got['declined_cost'] if got['declined_cost'] else ''}"
          f"{'  DISAGREE ' + '; '.join(got['bad']) if got['bad'] else ''}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fuzz_arguments(ap)
    ap.add_argument("--per-kernel", type=int, default=8)
    ap.add_argument("--no-cost-test", action="store_true",
                    help="compare wherever a checkpoint allows (converge.COMPARE_MARGIN 0)")
    a = ap.parse_args()
    if a.per_kernel < 1 or a.fuzz < 0 or a.batch < 1 or a.jobs < 1:
        print("bench_converge: --per-kernel, --batch and --jobs must be >= 1, --fuzz >= 0",
              file=sys.stderr)
        return 2
    from asmevo.emu.run import converge
    if a.no_cost_test:
        converge.COMPARE_MARGIN = 0.0
    t0 = time.perf_counter()
    rows = run_corpus(a.per_kernel, a.seed) if a.corpus else []
    if a.fuzz:
        work = [(a.seed, s, min(a.batch, a.fuzz - s), tuple(a.targets.split(",")),
                 tuple(a.opts.split(",")), a.per_kernel, converge.COMPARE_MARGIN)
                for s in range(0, a.fuzz, a.batch)]
        with ProcessPoolExecutor(a.jobs) as pool:
            for got in pool.map(_fuzz_batch, work):
                for row in got:
                    if row[1]["bad"] or row[1]["converged"]:
                        _show(row)
                rows += got
    counts = ("candidates", "converged", "diverged", "declined", "declined_cost")
    total = {k: sum(r[k] for _, r in rows) for k in counts}
    ratios = [x for _, r in rows for x in r["ratios"]]
    bad = sum(len(r["bad"]) for _, r in rows)
    print(f"seconds={time.perf_counter() - t0:.0f}")
    print(f"objects={len(rows)}")
    for k in counts:
        print(f"{k}={total[k]}")
    if ratios:    # a converged candidate's launches with like= against without (median)
        print(f"converged_time_ratio={float(np.median(ratios)):.3f}")
    print(f"disagreements={bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
