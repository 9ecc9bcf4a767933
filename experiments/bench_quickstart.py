#!/usr/bin/env python3
"""Evaluations per second of the README quick start, and what its whole process tree costs.

    python experiments/bench_quickstart.py [--runs 3] [--compare OTHER_RUN_DIR/archive.db]
        [--against OTHER_CHECKOUT] [--warm-cache]

Runs ``asmevo run experiments/quickstart.toml`` (50 evaluations on matmul_tiled, 2 jobs;
93 before issue 43 made it the recommended operator set)
``--runs`` times, each into a fresh run directory, and prints per run the wall time and
the CPU seconds of the whole process tree: the parent, its pool's workers and their
forked evaluating workers, read from /proc every 20 ms while they live (``/usr/bin/time``
misses a forked worker its parent never waited for). On a shared machine wall time
mostly measures the other users; interleave runs of two checkouts to compare them.

``--compare`` checks that every run's archive holds the same evaluations as another
archive (keys, verdicts, reasons, details, timings, speedups; timestamps and durations
aside) and the same individuals: a change meant to be exact must leave them alone.
Each run gets a build cache with no builds (``ASMEVO_CACHE_DIR``), as on a fresh machine
after setup.sh (which leaves the emulator's compiled float library there: it is copied
in) and as a search's new candidates find it; ``--warm-cache`` shares the environment's cache
between runs instead, so that from the second run on every build is a file read (what
rerunning the same quick start costs, not what searching does).
``--against`` runs another checkout's quick start (its own code, config and evaluation
count) before each run of this one, so that both see the same machine: a shared or
throttled machine's speed drifts by more than most changes. It then also prints each
pair's ratio of evaluations per second and ``speedup_against=`` (their median).
Ends with ``evaluations_per_second=`` (median run) and ``tree_cpu_seconds=`` (median).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def _procs() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds so far) of every process /proc shows."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
                out[int(d)] = (int(f[1]), (int(f[11]) + int(f[12])) / TICK)
            except (OSError, IndexError, ValueError):
                pass
    return out


def run_once(run_dir: Path, root: Path = ROOT, cache: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process tree) of one quick start of the
    checkout at ``root``; ``cache``: its build cache (``ASMEVO_CACHE_DIR``), else the
    environment's."""
    shutil.rmtree(run_dir, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(root))
    if cache is not None:
        env["ASMEVO_CACHE_DIR"] = str(cache)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "asmevo", "run",
                          str(root / "experiments" / "quickstart.toml"), "--run-dir",
                          str(run_dir), "--quiet"], env=env, cwd=root,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree, cpu = {p.pid}, {}
    while p.poll() is None:
        procs = _procs()
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _) in procs.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        for pid in tree & procs.keys():
            cpu[pid] = max(cpu.get(pid, 0.0), procs[pid][1])
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"quick start failed (exit {p.returncode}): {p.stderr.read().decode()[-400:]}")
    return wall, sum(cpu.values())


def _archive(db: Path):
    c = sqlite3.connect(db)
    evals = {r[0]: r[1:] for r in c.execute(
        "select eval_key, code_sha256, status, reason, details, timing, label, device, "
        "speedup, fitness, generation from evaluations")}
    inds = sorted(c.execute("select ind_id, island, generation, slot, operator, parents, "
                            "edits, code_sha256, eval_key from individuals"))
    c.close()
    return evals, inds


def same_archive(a: Path, b: Path) -> tuple[bool, str]:
    """Whether two run archives hold the same evaluations and individuals, and a line."""
    ea, ia = _archive(a)
    eb, ib = _archive(b)
    differ = sorted(k for k in ea.keys() | eb.keys() if ea.get(k) != eb.get(k))
    best = (max((v[8] or 0) for v in ea.values()), max((v[8] or 0) for v in eb.values()))
    ok = not differ and ia == ib
    return ok, (f"{len(ea)} vs {len(eb)} evaluations, {len(differ)} differ, individuals "
                f"{'the same' if ia == ib else 'differ'}, best {best[0]:.4f}x vs {best[1]:.4f}x")


def _fail(message: str) -> None:
    """One line on stderr, exit 2 (bad input)."""
    print(f"bench_quickstart.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def _cache(base: Path, name: str, args) -> Path | None:
    """A run's build cache: a new folder with no builds, or None (the environment's) with
    ``--warm-cache``. It holds what setup.sh leaves in a fresh machine's cache: the
    emulator's compiled float library (``native/``), copied from the environment's."""
    if args.warm_cache:
        return None
    sys.path.insert(0, str(ROOT))
    from asmevo import knobs
    made = knobs.cache_dir() / "native"
    if made.is_dir():
        shutil.copytree(made, base / name / "native")
    return base / name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compare", type=Path, help="an archive.db the runs must equal")
    ap.add_argument("--keep", type=Path, help="folder for the run directories (default: a "
                    "temporary one, removed at the end)")
    ap.add_argument("--against", type=Path, help="another checkout, run before each run")
    ap.add_argument("--warm-cache", action="store_true", help="share the environment's "
                    "build cache between runs (default: an empty one per run)")
    args = ap.parse_args()
    if args.runs < 1:
        _fail("--runs must be at least 1")
    if args.against is not None and not (args.against / "experiments" / "quickstart.toml").is_file():
        _fail(f"{args.against}: not a checkout with experiments/quickstart.toml")
    base = args.keep or Path(tempfile.mkdtemp(prefix="asmevo-quickstart-"))
    walls, cpus, n, ratios = [], [], 0, []
    try:
        for i in range(args.runs):
            if args.against is not None:
                other = base / f"against{i}"
                wall_a, cpu_a = run_once(other, args.against.resolve(),
                                         _cache(base, f"cache-against{i}", args))
                n_a = len(_archive(other / "archive.db")[0])
                print(f"against {i}: {n_a} evaluations, wall {wall_a:.2f} s, tree CPU "
                      f"{cpu_a:.2f} s", flush=True)
            load = os.getloadavg()[0]
            wall, cpu = run_once(base / f"run{i}", ROOT, _cache(base, f"cache{i}", args))
            n = len(_archive(base / f"run{i}" / "archive.db")[0])
            walls.append(wall)
            cpus.append(cpu)
            line = f"run {i}: {n} evaluations, wall {wall:.2f} s, tree CPU {cpu:.2f} s, " \
                   f"load average {load:.1f}"
            if args.compare is not None:
                ok, why = same_archive(args.compare, base / f"run{i}" / "archive.db")
                line += f"; archive {'the same' if ok else 'DIFFERS'}: {why}"
                if not ok:
                    print(line)
                    sys.exit(1)
            print(line, flush=True)
            if args.against is not None:
                ratios.append((n / wall) / (n_a / wall_a))
                print(f"pair {i}: {ratios[-1]:.2f}x the evaluations per second of "
                      f"{args.against}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"build cache: {'shared (--warm-cache)' if args.warm_cache else 'no builds per run'}")
    print(f"wall min {min(walls):.2f} median {statistics.median(walls):.2f} s; tree CPU min "
          f"{min(cpus):.2f} median {statistics.median(cpus):.2f} s")
    print(f"evaluations_per_second={n / statistics.median(walls):.2f}")
    print(f"tree_cpu_seconds={statistics.median(cpus):.2f}")
    if ratios:
        print(f"speedup_against={statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
