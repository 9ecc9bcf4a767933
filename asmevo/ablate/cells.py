"""Running an ablation's cells: each one an engine run in its own run directory.

A cell directory (``OUT/cells/<set>/<kernel>/seed<seed>``) is an ordinary run
directory (:mod:`asmevo.engine.rundir`), so ``asmevo report`` and ``asmevo best``
work on it. Re-running the ablation looks at every cell first: a finished cell
is skipped, an unfinished one (killed, interrupted) is resumed by the engine's
own resume from its last committed generation, a missing one is started. A
cell whose stored config differs from the one the ablation file now gives is
an error: results of two configs are never mixed in one table.

Parallelism: cells run across processes (joblib/loky, ``jobs`` at once), each
cell's evaluations with the cell's own ``[parallel]`` (by default inline). Cells
are independent and there are many, so every core stays busy until the last
few cells, whereas parallel evaluation inside one cell idles while that cell
selects, proposes and builds between generations. ``jobs × parallel.n_jobs``
should not exceed the cores.
"""
from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from asmevo.archive.store import Archive, ArchiveError, archive_is_empty
from asmevo.ablate.config import Cell
from asmevo.engine.rundir import ARCHIVE
from asmevo.errors import AsmevoError
from asmevo.lifetime import die_with_parent


class AblationError(ArchiveError):
    """A cell directory that belongs to a different config, or a cell that failed."""


NEW, UNFINISHED, FINISHED = "new", "unfinished", "finished"


@dataclass(frozen=True)
class CellOutcome:
    cell: tuple[str, str, int]
    action: str               # "ran" | "resumed" | "skipped" | "failed"
    reason: str               # the engine's stop reason, or why the cell failed
    evaluations: int
    best: float
    seconds: float            # wall time of this session's work on the cell
    cpu_seconds: float = 0.0  # CPU time of it, its evaluation children included


def cell_state(cell: Cell, out: Path) -> str:
    """new / unfinished / finished; an error if the directory holds another config's run."""
    path = out / cell.relpath
    archive = open_cell_archive(path)
    if archive is None:
        return NEW
    try:
        runs = archive.runs()
    finally:
        archive.close()
    if not runs:                      # killed between creating the archive and the run row
        return NEW
    row = runs[-1]
    if row["config_toml"] != cell.text:
        old, new = row["config_toml"].splitlines(), cell.text.splitlines()
        diff = next((f"was {a!r}, now {b!r}" for a, b in zip(old, new) if a != b),
                    "a different number of lines")
        raise AblationError(f"cell {cell.relpath} was started from a different config "
                            f"({diff}); use another --out or delete that cell",
                            path=str(path))
    return FINISHED if row["status"] == "finished" else UNFINISHED


def open_cell_archive(path: Path) -> Archive | None:
    """A cell's archive (read-only), or None where none was created yet (a kill can leave
    an empty database file behind, which the next start fills). A damaged archive is an
    error, and looking at it changes none of its files."""
    db = path / ARCHIVE
    if archive_is_empty(db):
        return None
    return Archive(db, check=False, readonly=True)


def run_cell(cell: Cell, out: Path, parent: int | None = None) -> CellOutcome:
    """Start, resume or skip one cell (worker side; module-level so it pickles).

    An expected failure (a kernel the evaluator cannot set up, a locked directory)
    is the cell's outcome, ``failed``, so the other cells go on; a bug still raises.
    """
    if parent is not None:
        # die with the ablation process: a cell orphaned by ``kill -9`` would keep its
        # run directory locked and stop the re-run from resuming it
        die_with_parent(parent)
    t0, c0 = time.perf_counter(), _cpu()
    try:
        outcome = _run_cell(cell, out, t0)
    except (AsmevoError, ArchiveError) as exc:
        outcome = CellOutcome(cell.key, "failed", str(exc), 0, float("nan"),
                              time.perf_counter() - t0)
    return replace(outcome, cpu_seconds=_cpu() - c0)


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (isolated candidate runs)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _run_cell(cell: Cell, out: Path, t0: float) -> CellOutcome:
    from asmevo.engine.command import search
    from asmevo.engine.rundir import create_run, open_run

    path = out / cell.relpath
    state = cell_state(cell, out)
    if state == FINISHED:
        return _outcome(cell, path, "skipped", t0)
    run = open_run(path) if state == UNFINISHED else create_run(cell.config(), path)
    with run:
        search(run)
    return _outcome(cell, path, "resumed" if state == UNFINISHED else "ran", t0)


def _outcome(cell: Cell, path: Path, action: str, t0: float) -> CellOutcome:
    archive = Archive(path / ARCHIVE, check=False, readonly=True)
    try:
        row = archive.run()
        last = archive.last_checkpoint(int(row["run_id"]))
        best = archive.best_equal_fitness(row["run_id"], row["eval_context"])
    finally:
        archive.close()
    evals = int(last[1]["spent"]["evaluations"]) if last else 0
    return CellOutcome(cell.key, action, row["stop_reason"], evals,
                       float("nan") if best is None else float(best),
                       time.perf_counter() - t0)


def run_cells(cells: list[Cell], out: Path, jobs: int,
              on_done: Callable[[CellOutcome], None] = lambda o: None) -> list[CellOutcome]:
    """Every cell that is not finished, ``jobs`` at once; outcomes as they finish."""
    done = []
    for outcome in _dispatch(cells, out, jobs):
        on_done(outcome)
        done.append(outcome)
    return done


def _dispatch(cells: list[Cell], out: Path, jobs: int) -> Iterator[CellOutcome]:
    if jobs == 1 or len(cells) <= 1:
        for c in cells:
            yield run_cell(c, out)
        return
    from joblib import Parallel, delayed
    parallel = Parallel(n_jobs=min(jobs, len(cells)), return_as="generator_unordered",
                        batch_size=1, pre_dispatch="n_jobs")
    yield from parallel(delayed(run_cell)(c, out, os.getpid()) for c in cells)
