"""``asmevo ablate CONFIG [--out DIR] [--jobs N]``: operator sets × kernels × seeds.

Runs every cell that is not finished (resuming interrupted ones), then writes
into the output directory: ``summary.csv`` (one row per operator set),
``operators.csv``, ``kernels.csv``, ``cells.csv``, ``timings.csv`` (engine
seconds per cell), ``summary.md`` (the tables as markdown) and ``best_vs_evaluations.png``. Running the same command again
after an interruption resumes the ablation; after it finished, it only
rewrites the tables. Wired into :mod:`asmevo.cli` through ``add_parser``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _clock(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_outputs(ab, out: Path, *, plots: bool = True) -> dict:
    """Tables (CSV + markdown) and the plot, from the cells' archives; returns the tables."""
    from asmevo.ablate import summary
    from asmevo.ablate.plots import plot_best_vs_evaluations
    from asmevo.engine.report import PLOT_HINT

    results = summary.read_cells(ab, out)
    tables = {"summary": summary.summary_table(ab, results),
              "operators": summary.operators_table(ab, results),
              "kernels": summary.kernels_table(ab, results),
              "cells": summary.cells_table(results),
              "timings": summary.timings_table(results)}
    for name, df in tables.items():
        _write(out / f"{name}.csv", df.to_csv(index=False))
    md = summary.render_markdown(ab, tables["summary"], tables["operators"], tables["kernels"])
    _write(out / "summary.md", md)
    notes = []
    if plots and results:
        label = tables["summary"]["timing"].iloc[0]
        if plot_best_vs_evaluations(results, ab.sets, f"ablation {ab.name}", label,
                                    out / "best_vs_evaluations.png") is None:
            notes.append(PLOT_HINT)
    return tables | {"markdown": md, "notes": notes}


def _cmd_ablate(args: argparse.Namespace) -> int:
    from asmevo.ablate.cells import FINISHED, cell_state, run_cells
    from asmevo.ablate.config import load_ablation

    ab = load_ablation(args.config)
    out = Path(args.out) if args.out else Path("runs") / "ablations" / ab.name
    jobs = args.jobs or ab.jobs or len(os.sched_getaffinity(0))
    cells = ab.cells()
    states = {c.key: cell_state(c, out) for c in cells}     # a foreign cell fails here
    todo = [c for c in cells if states[c.key] != FINISHED]
    n_resume = sum(states[c.key] == "unfinished" for c in todo)
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "ablation.toml", ab.text)
    print(f"ablation {ab.name}: {len(ab.sets)} sets × {len(ab.kernels)} kernels × "
          f"{len(ab.seeds)} seeds = {len(cells)} cells; {len(cells) - len(todo)} finished, "
          f"{n_resume} to resume, {len(todo) - n_resume} to start; {jobs} at once; out {out}",
          flush=True)
    t0 = time.monotonic()
    count = [len(cells) - len(todo)]
    failed = []
    cpu = [0.0]

    def done(o) -> None:
        count[0] += 1
        cpu[0] += o.cpu_seconds
        s, k, seed = o.cell
        if o.action == "failed":
            failed.append(o)
            print(f"[{count[0]}/{len(cells)}] FAILED  {s} / {k} / seed {seed}: {o.reason}",
                  flush=True)
            return
        print(f"[{count[0]}/{len(cells)}] {o.action:<7} {s} / {k} / seed {seed}: "
              f"{o.evaluations} evaluations, best {o.best:.4f}x ({o.reason}), "
              f"{o.seconds:.1f}s ({o.cpu_seconds:.1f}s CPU); "
              f"elapsed {_clock(time.monotonic() - t0)}", flush=True)

    run_cells(todo, out, jobs, done)
    tables = write_outputs(ab, out, plots=not args.no_plots)
    print()
    print(tables["markdown"])
    for note in tables["notes"]:
        print(note)
    wall = time.monotonic() - t0
    print(f"wall time {_clock(wall)}; cells' CPU time {cpu[0]:.0f}s ({cpu[0] / max(wall, 1e-9):.2f} "
          f"cores busy on average); tables and plot in {out}")
    if failed:
        print(f"{len(failed)} cell(s) failed; fix the cause and run the same command again",
              file=sys.stderr)
        return 2
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("ablate", help="operator sets × kernels × seeds; resumable")
    p.add_argument("config", help="ablation config (TOML; see experiments/ablations/)")
    p.add_argument("--out", help="output directory (default runs/ablations/<ablation.name>)")
    p.add_argument("--jobs", type=int, help="cells run at once (default ablation.jobs, else "
                                            "every usable core)")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_cmd_ablate)
