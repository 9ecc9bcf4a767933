#!/usr/bin/env python3
"""The emulator's fast path (asmevo.emu.run.batch: many launches in one pass) against launches
run alone, field by field, on the corpus and on the differential fuzzer's programs.

    python experiments/bench_fastpath.py [--corpus] [--fuzz N] [--seed S]
        [--targets gfx942,gfx90a] [--opts O1,O2] [--batch 40] [--jobs 1]

Corpus: every kernel of experiments/kernels on each of its objects, with the launches a
candidate check makes (every input set at ``small``, run variants 0 and 2, the serial
schedules 1 and 3 on the first set, approximate member 1). Fuzzer: N programs of
experiments/emufuzz, compiled for every target and opt level, each kernel launched with
two garbage seeds, both serial schedules and approximate member 1 (no wall-clock
limit: on a loaded machine one side could time out and the other not; the
instruction budget bounds every launch). A launch pair agrees
when status, message, outputs, guards, per-instruction profile, instruction and lane
counts, fault addresses and poison reads are all equal. Ends with ``corpus_kernels=``,
``fuzz_programs=``, ``launch_sets=`` (sets compared), ``batched=`` (sets the fast path
took; the rest it handed back to launches run alone), ``serial_proven=`` /
``serial_refused=`` (passes whose serial launches ran in lockstep under
asmevo.emu.machine.racecheck's proof / were refused it and ran serially) and ``disagreements=``.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIELDS = ("status", "message", "waves", "instructions_executed", "lane_instructions",
          "poison_reads", "address", "byte_address", "kernel")


def differences(a, b) -> list[str]:
    """What differs between two LaunchResults (every field but seconds and error)."""
    out = [f for f in FIELDS if getattr(a, f) != getattr(b, f)]
    out += [f"outputs[{k}]" for k in a.outputs if a.outputs[k].tobytes() != b.outputs[k].tobytes()]
    if a.guards != b.guards:
        out.append("guards")
    out += [f"profile[{k}]" for k in a.profile
            if not (np.array_equal(a.profile[k].counts, b.profile[k].counts)
                    and np.array_equal(a.profile[k].lanes, b.profile[k].lanes))]
    return out


def compare(emu, spec, requests, *, numpy_alone: bool = False,
            **kw) -> tuple[bool, list[str]]:
    """(batched?, disagreements) of one set of launches; ``numpy_alone``: the launches run
    alone take the numpy float32 path, the pass the compiled one where this machine has
    it (asmevo.emu.isa.native), so the two are compared too."""
    from asmevo.emu.isa import native
    from asmevo.emu.run.batch import launch_many
    many = launch_many(emu, spec, requests, **kw)
    if many is None:
        return False, []
    bad = []
    for i, (r, got) in enumerate(zip(requests, many)):
        with native.disabled() if numpy_alone else contextlib.nullcontext():
            alone = emu.launch(spec, r.inputs, guard_bytes=r.guard_bytes,
                               guard_fill=r.guard_fill, garbage_seed=r.garbage_seed,
                               schedule=r.schedule, approx_variant=r.approx_variant, **kw)
        d = differences(alone, got)
        if d:
            bad.append(f"launch {i} ({r.schedule}, member {r.approx_variant}): {', '.join(d)}")
    return True, bad


def corpus_requests(spec):
    """The launches of one candidate check (asmevo.verify.differential)."""
    from asmevo.emu.run.batch import Request
    from asmevo.runtime.emulator import _SCHEDULES, garbage_seed
    from asmevo.verify.differential import GUARD_BYTES, _variants
    from asmevo.verify.inputs import guard_pattern, input_sets, poisoned
    sets = input_sets(spec, (0, 1, 2), True)
    reqs = [Request(poisoned(spec, vals), GUARD_BYTES, guard_pattern(v), garbage_seed(v),
                    _SCHEDULES[v % 4]) for j, (_, vals) in enumerate(sets)
            for v in _variants(j, 2, True)]
    reqs.append(Request(poisoned(spec, sets[0][1]), GUARD_BYTES, guard_pattern(0),
                        garbage_seed(0), "lockstep", 1))
    return reqs


def run_corpus(numpy_alone: bool = False) -> tuple[int, int, int, list[str]]:
    from asmevo.emu import Emulator
    from asmevo.launch.spec import load_spec
    kernels = sets = batched = 0
    bad: list[str] = []
    for d in sorted((ROOT / "experiments" / "kernels").iterdir()):
        if not (d / "spec.toml").exists():
            continue
        spec = load_spec(d, "small")
        for path in [spec.code_object, *spec.code_objects.values()]:
            emu = Emulator(path)
            took, why = compare(emu, spec, corpus_requests(spec), numpy_alone=numpy_alone)
            kernels += 1
            sets += 1
            batched += took
            bad += [f"{d.name} {path.name}: {w}" for w in why]
            print(f"{d.name:24s} {path.name:28s} {'batched' if took else 'alone'}"
                  f"{'  DISAGREE ' + '; '.join(why) if why else ''}", flush=True)
    return kernels, sets, batched, bad


def fuzz_launches(p):
    """(spec, requests, instruction budget) of an emufuzz program's launches: two garbage
    seeds, both serial schedules and approximate member 1 (no wall-clock limit: on a
    loaded machine one side could time out and the other not)."""
    from asmevo.emu.run.batch import Request
    from experiments.emufuzz import values
    from experiments.emufuzz.harness import POISON, launch_spec
    inputs = {f"in{b}": a for b, a in enumerate(values.inputs(p))}
    inputs["out"] = np.full(p.n * len(p.outputs) * 8, POISON, np.uint8).view(np.uint64)
    reqs = [Request(inputs, 64, fill, seed_, sched, member)
            for fill, seed_, sched, member in (
                (0x5A, 11, "lockstep", 0), (0xA5, 10, "lockstep", 0),
                (0xC3, 13, "serial", 0), (0x3C, 12, "serial_reverse", 0),
                (0x5A, 11, "lockstep", 1))]
    return launch_spec(p), reqs, 200_000 * p.grid * -(-p.block // 64)


def _fuzz_batch(args) -> tuple[int, int, int, list[str], dict]:
    seed, start, count, targets, opts, numpy_alone = args
    from asmevo.emu import Emulator
    from asmevo.emu.run.batch import STATS
    before = dict(STATS)
    from experiments.emufuzz.build import build
    from experiments.emufuzz.generate import generate
    from experiments.emufuzz.render import batch_source
    programs = [generate(seed, start + k) for k in range(count)]
    with tempfile.TemporaryDirectory(prefix="fastpath-") as tmp:
        built = build(batch_source(programs), Path(tmp), targets=targets, opts=opts, host=False)
        sets = batched = 0
        bad: list[str] = []
        for (target, opt), path in sorted(built.objects.items()):
            emu = Emulator(path)
            for p in programs:
                spec, reqs, budget = fuzz_launches(p)
                try:
                    took, why = compare(emu, spec, reqs, numpy_alone=numpy_alone,
                                        max_instructions=budget)
                except Exception as exc:    # noqa: BLE001 - a launch that does not start
                    why, took = [], False
                    if "no code for kernel" not in str(exc):
                        why = [f"launch raised {type(exc).__name__}: {exc}"]
                sets += 1
                batched += took
                bad += [f"{p.name} {target}-{opt}: {w}" for w in why]
    return count, sets, batched, bad, {k: STATS[k] - before[k] for k in STATS}


def run_fuzz(n: int, seed: int, targets, opts, batch: int, jobs: int,
             numpy_alone: bool = False):
    work = [(seed, s, min(batch, n - s), targets, opts, numpy_alone)
            for s in range(0, n, batch)]
    progs = sets = batched = 0
    bad: list[str] = []
    from asmevo.emu.run.batch import STATS
    with ProcessPoolExecutor(jobs) as pool:
        for k, (c, s, b, why, stats) in enumerate(pool.map(_fuzz_batch, work)):
            progs, sets, batched = progs + c, sets + s, batched + b
            bad += why
            for key, n in stats.items():     # the workers' passes, counted here
                STATS[key] += n
            print(f"fuzz batch {k + 1}/{len(work)}: {progs} programs, {sets} launch sets, "
                  f"{batched} batched, {len(bad)} disagreements", flush=True)
            for w in why:
                print("  DISAGREE", w, flush=True)
    return progs, sets, batched, bad


def fuzz_arguments(ap: argparse.ArgumentParser) -> None:
    """--corpus and the emufuzz options (--fuzz N --seed --targets --opts --batch --jobs)."""
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--fuzz", type=int, default=0)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--targets", default="gfx942,gfx90a")
    ap.add_argument("--opts", default="O1,O2")
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fuzz_arguments(ap)
    ap.add_argument("--numpy-alone", action="store_true", help="launches run alone take "
                    "the numpy float32 path (the pass: the compiled one, where built)")
    a = ap.parse_args()
    from asmevo.emu.isa import native
    print(f"float32 path: {native.status()}"
          f"{'; launches alone: numpy' if a.numpy_alone else ''}", flush=True)
    t0 = time.perf_counter()
    kernels = progs = sets = batched = 0
    bad: list[str] = []
    if a.corpus:
        kernels, sets, batched, bad = run_corpus(a.numpy_alone)
    if a.fuzz:
        progs, s, b, why = run_fuzz(a.fuzz, a.seed, tuple(a.targets.split(",")),
                                    tuple(a.opts.split(",")), a.batch, a.jobs, a.numpy_alone)
        sets, batched, bad = sets + s, batched + b, bad + why
    print(f"seconds={time.perf_counter() - t0:.0f}")
    print(f"corpus_kernels={kernels}")
    print(f"fuzz_programs={progs}")
    print(f"launch_sets={sets}")
    print(f"batched={batched}")
    from asmevo.emu.run.batch import STATS
    # passes whose serial launches ran in lockstep (asmevo.emu.machine.racecheck), and refusals
    print(f"serial_proven={STATS['speculated']}")
    print(f"serial_refused={STATS['conflicts']}")
    print(f"disagreements={len(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
