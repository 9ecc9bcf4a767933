"""Many batches in parallel: generate (or load) programs, build, run, summarize, keep failures.

A batch is the unit of work of one process (compiles amortize over its
programs). Failing programs are written as JSON (the program tree, so a later
generator version still replays them exactly) with the runs that failed, and
``replay`` runs such a directory again, e.g. after an emulator fix is merged.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from experiments.emufuzz.build import OPTS, TARGETS, build
from experiments.emufuzz.generate import GenConfig, generate
from experiments.emufuzz.harness import Result, run_batch
from experiments.emufuzz.ir import Program, from_json, to_json
from experiments.emufuzz.render import batch_source

FAILURES = ("mismatch", "refused", "fault", "timeout")


@dataclass(frozen=True)
class Setup:
    targets: tuple[str, ...] = TARGETS
    opts: tuple[str, ...] = OPTS
    clang: str | None = None
    keep: str | None = None          # directory to keep failing programs in
    gen: GenConfig = field(default_factory=GenConfig)


@dataclass
class BatchReport:
    results: list[Result]
    compile_seconds: dict[str, float]
    seconds: float
    programs: int


def run_programs(programs: list[Program], setup: Setup, workdir: Path) -> BatchReport:
    """Build ``programs`` as one batch and run them; if clang rejects the batch at some
    opt level, build each program alone so one bad program only costs itself."""
    t0 = time.perf_counter()
    clang = Path(setup.clang) if setup.clang else None
    built = build(batch_source(programs), workdir, targets=setup.targets, opts=setup.opts,
                  clang=clang)
    secs = dict(built.seconds)
    if built.errors and len(programs) > 1:
        results: list[Result] = []
        for k, p in enumerate(programs):
            sub = run_programs([p], setup, workdir / f"p{k}")
            results += sub.results
            for key, v in sub.compile_seconds.items():
                secs[key] = secs.get(key, 0.0) + v
    else:
        results = run_batch(programs, built, setup.targets, setup.opts)
    return BatchReport(results, secs, time.perf_counter() - t0, len(programs))


def _batch_job(args) -> tuple[BatchReport, list[str]]:
    """Worker: programs [lo, hi) of stream ``seed`` (or the given JSON texts)."""
    seed, lo, hi, texts, setup = args
    programs = [from_json(t) for t in texts] if texts else \
        [generate(seed, i, setup.gen) for i in range(lo, hi)]
    tmp = Path(tempfile.mkdtemp(prefix="emufuzz-"))
    try:
        rep = run_programs(programs, setup, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    failed = {r.program for r in rep.results if r.outcome in FAILURES}
    return rep, [to_json(p) for p in programs if p.name in failed]


def keep_failures(directory: Path, texts: list[str], results: list[Result]) -> None:
    """One JSON file per failing program: the program and the runs that failed."""
    directory.mkdir(parents=True, exist_ok=True)
    by_name: dict[str, list[Result]] = {}
    for r in results:
        if r.outcome in FAILURES:
            by_name.setdefault(r.program, []).append(r)
    for t in texts:
        p = from_json(t)
        runs = [{"target": r.target, "opt": r.opt, "outcome": r.outcome, "detail": r.detail,
                 "tags": list(r.tags)} for r in by_name.get(p.name, [])]
        tmp = directory / f".{p.name}.json.tmp"
        tmp.write_text(json.dumps({"program": json.loads(t), "failed": runs}, indent=1))
        os.replace(tmp, directory / f"{p.name}.json")


def load_failed_runs(directory: Path) -> list[Result]:
    """The failing runs recorded beside the programs (outcome, detail, tags)."""
    out = []
    for f in sorted(Path(directory).glob("*.json")):
        doc = json.loads(f.read_text())
        out += [Result(doc["program"]["name"], r["target"], r["opt"], r["outcome"], r["detail"],
                       tags=tuple(r.get("tags", ()))) for r in doc["failed"]]
    return out


def load_failures(directory: Path) -> list[Program]:
    out = []
    for f in sorted(Path(directory).glob("*.json")):
        try:
            doc = json.loads(f.read_text())
            out.append(from_json(json.dumps(doc["program"])))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{f}: not an emufuzz program file ({exc})") from exc
    return out


@dataclass
class Campaign:
    reports: list[BatchReport] = field(default_factory=list)
    wall: float = 0.0
    cut: bool = False               # the time budget ended the run early

    @property
    def results(self) -> list[Result]:
        return [r for b in self.reports for r in b.results]

    @property
    def programs(self) -> int:
        return sum(b.programs for b in self.reports)

    def counts(self) -> Counter:
        return Counter(r.outcome for r in self.results)


def run(jobs_args: list, jobs: int, setup: Setup, progress=None,
        budget: float | None = None) -> Campaign:
    """Run the batch jobs on ``jobs`` processes; keep failures as they come in. With a
    ``budget`` (seconds), batches not finished by then are dropped (``Campaign.cut``)."""
    camp = Campaign()
    t0 = time.perf_counter()
    keep = Path(setup.keep) if setup.keep else None
    pools: list[ProcessPoolExecutor] = []
    outs = map(_batch_job, jobs_args) if jobs <= 1 else _pooled(jobs_args, jobs, pools)
    try:
        for rep, failed in outs:
            camp.reports.append(rep)
            if keep is not None and failed:
                keep_failures(keep, failed, rep.results)
            if progress:
                progress(camp)
            if budget is not None and time.perf_counter() - t0 > budget:
                camp.cut = len(camp.reports) < len(jobs_args)
                break
    finally:
        for ex in pools:
            _stop(ex)
    camp.wall = time.perf_counter() - t0
    return camp


def _stop(ex: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers: a batch already running would
    otherwise hold the interpreter's exit until it finished (a --budget of 450 s on the
    H200 machine's 16 workers ran on to the call's 600 s limit)."""
    ex.shutdown(wait=False, cancel_futures=True)
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()


TASKS_PER_POOL = 16    # batches per worker before the pool is replaced


def _pooled(jobs_args: list, jobs: int, pools: list):
    """``_batch_job`` over ``jobs_args`` in order, on fresh worker processes every
    ``jobs * TASKS_PER_POOL`` batches (emulator caches only grow within a process).
    One pool per chunk, not ``max_tasks_per_child``: CPython 3.11's executor can hang
    when it replaces workers that reached it (a seed-3000 campaign stopped for good
    after exactly 2 x 16 batches)."""
    step = jobs * TASKS_PER_POOL
    for lo in range(0, len(jobs_args), step):
        ex = ProcessPoolExecutor(max_workers=jobs)
        pools.append(ex)
        yield from ex.map(_batch_job, jobs_args[lo:lo + step])
        ex.shutdown(wait=True)
        pools.remove(ex)


def generated_jobs(seed: int, programs: int, batch: int, setup: Setup, start: int = 0) -> list:
    return [(seed, lo, min(start + programs, lo + batch), None, setup)
            for lo in range(start, start + programs, batch)]


def replay_jobs(programs: list[Program], batch: int, setup: Setup) -> list:
    texts = [to_json(p) for p in programs]
    return [(0, 0, 0, texts[i:i + batch], setup) for i in range(0, len(texts), batch)]
