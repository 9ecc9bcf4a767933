"""A run's individuals as a few compact arrays, read in sequential passes.

The dashboard asks the same questions of every page load (counts per island,
the best, the curve of the best so far, per-operator rates, a page of
individuals) and an archive of a long search holds hundreds of thousands of
individuals whose rows carry their edit histories and verdict details (about
6 KB each). A join of ``individuals`` and ``evaluations`` through the index costs
a B-tree descent and an overflow chain per row; a sequential scan of each table
costs a fraction of that. So a :class:`Digest` scans ``evaluations`` (the run's
context) and ``individuals`` (the run) once each, joins them in memory, and keeps
per individual only numbers: birth order, island, status code, fitness, whether
its evaluation was fresh, when it was made, its row id (about 45 bytes per
individual; text: ids, edits, verdicts, is read a page at a time by row id, see
:mod:`asmevo.archive.pages`). The operator table (:func:`operators`) is a pass of its own
over the run's ids, parents and proposals: it needs every parent's fitness, found
through the ids, which are held only while that pass runs.

Definitions follow :mod:`asmevo.archive.queries` (what ``asmevo report`` prints), and
``tests/serve/test_views.py`` checks the dashboard's views against it.
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asmevo.archive.errors import ArchiveError

MISSING = -1          # status code of an individual whose evaluation is not in the archive

# Every statement scans its table in row order ("+column": not through an index, whose
# order would send each row fetch to another page) and returns plain numbers where the
# archive may hold anything (a crafted archive's fitness can be text). Each column comes
# back as one JSON array (json_group_array): SQLite writes it and Python's C parser reads
# it, 5x faster than a few hundred thousand row tuples.
# a number as text of 17 significant digits (JSON's would keep 15: not the same double)
_NUM = "CASE WHEN typeof({0}) IN ('integer', 'real') THEN printf('%!.17g', {0}) ELSE 'nan' END"
_TEXT = "CASE WHEN typeof({0}) = 'text' THEN {0} END"
_EVALUATIONS = (("eval_key", _TEXT.format("status"), _NUM.format("fitness"),
                 "run_id IS :run",          # made by the run (and the generation: when)
                 "CASE WHEN typeof(generation) = 'integer' THEN generation ELSE -1 END",
                 _NUM.format("created")), "evaluations WHERE +eval_context = :context")
_INDIVIDUALS = (("rowid", "ind_id", "island", "generation", "slot", "eval_key"),
                "individuals WHERE +run_id = :run")
_IDS = (("rowid", "ind_id"), "individuals WHERE +run_id = :run")
_PARENTS = (("i.rowid", "j.value"),
            "individuals i, json_each(i.parents) j WHERE +i.run_id = :run")
_PROPOSALS = (("operator", "kind", "outcome = 'edit'", "ind_id"),
              "proposals WHERE +run_id = :run")


@dataclass
class Digest:
    """The numbers of one run's individuals, in birth order (generation, island, slot)."""

    rowid: np.ndarray         # int64: the individual's row, for its text
    island: np.ndarray        # int64
    generation: np.ndarray    # int64
    status: np.ndarray        # int16: index into ``statuses``, MISSING without evaluation
    statuses: list[str]
    fitness: np.ndarray       # float64 (NaN without evaluation)
    fresh: np.ndarray         # bool: its evaluation was new (report's ``first``)
    created: np.ndarray       # float64: when that evaluation was stored (NaN without one)

    def __len__(self) -> int:
        return len(self.rowid)

    def code(self, status: str) -> int:
        return self.statuses.index(status) if status in self.statuses else -2

    @property
    def equal(self) -> np.ndarray:
        return self.status == self.code("equal")

    @property
    def score(self) -> np.ndarray:
        """Fitness where equal, else 0 (what the curve of the best so far climbs)."""
        return np.where(self.equal, np.nan_to_num(self.fitness, nan=0.0), 0.0)

    def best(self) -> int | None:
        """Position of the fittest equal individual, the first born among ties."""
        eq = self.equal & ~np.isnan(self.fitness)
        if not eq.any():
            return None
        return int(np.argmax(np.where(eq, self.fitness, -np.inf)))


@contextlib.contextmanager
def _reading(conn: sqlite3.Connection, path: str):
    """A cursor of plain rows; SQLite's and the values' errors as one ArchiveError.

    The collector is off meanwhile: the columns are lists of a few hundred thousand
    objects that live until the arrays are made, and the cyclic collector, run every
    700 allocations, would walk them all each time."""
    cur = conn.cursor()
    cur.row_factory = None
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield cur
    except sqlite3.DatabaseError as exc:
        raise ArchiveError(f"archive is corrupt or unreadable ({exc})", path=path) from exc
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ArchiveError(f"archive holds a value of the wrong type ({str(exc)[:200]})",
                           path=path) from exc
    finally:
        if collecting:
            gc.enable()


def build(conn: sqlite3.Connection, run_id: int, eval_context: str, path: str) -> Digest:
    """One pass over the context's evaluations and one over the run's individuals,
    joined by key in memory (pandas' hash tables)."""
    with _reading(conn, path) as cur:
        return _build(cur, {"run": run_id, "context": eval_context}, path)


def operators(conn: sqlite3.Connection, run_id: int, d: Digest, path: str) -> list[dict]:
    """report's ``operator_stats`` rows: per (operator, kind), proposals, edits, accepted,
    improved (equal and fitter than its fittest parent), rates and the best speedup.
    One pass over the run's ids, one over its parents and one over its proposals."""
    with _reading(conn, path) as cur:
        args = {"run": run_id}
        rowid, ind = _columns(cur, _IDS, args)
        if len(rowid) != len(d):
            raise ArchiveError("the archive changed while it was read", path=path)
        ordered = np.empty(len(d), object)
        ordered[_where(d, rowid)] = ind
        ids = pd.Index(ordered)
        return _operator_rows(cur, args, d, ids, _parent_best(cur, args, d, ids), path)


def _where(d: Digest, rowids) -> np.ndarray:
    """The birth-order positions of individuals given by row id."""
    by_row = np.argsort(d.rowid)
    return by_row[np.searchsorted(d.rowid, np.asarray(rowids, np.int64), sorter=by_row)]


def _columns(cur, query: tuple[tuple[str, ...], str], args: dict) -> list[list]:
    """The query's columns, each a list (row order the same in all of them: one pass)."""
    names, source = query
    sql = "SELECT " + ", ".join(f"json_group_array({c})" for c in names) + " FROM " + source
    return [json.loads(text) for text in cur.execute(sql, args).fetchone()]


def _build(cur, args: dict, path: str) -> Digest:
    ekey, estatus, efit, made_here, egen, ecreated = _columns(cur, _EVALUATIONS, args)
    rowid, ind, island, generation, slot, key = _columns(cur, _INDIVIDUALS, args)
    order = np.lexsort((np.array(slot, np.int64), np.array(island, np.int64),
                        np.array(generation, np.int64)))
    rowid = np.array(rowid, np.int64)[order]
    ind, key = np.array(ind, object)[order], np.array(key, object)[order]
    island = np.array(island, np.int64)[order]
    generation = np.array(generation, np.int64)[order]
    if pd.Index(ind).has_duplicates:
        raise ArchiveError("two individuals of the run share one id", path=path)
    codes, statuses = pd.factorize(np.array(estatus, object), sort=True)   # -1: not text
    at = pd.Index(ekey).get_indexer(key) if len(ekey) else np.full(len(key), -1)
    status = np.append(codes, MISSING).astype(np.int16)[at]
    fitness = np.array(efit + ["nan"], float)[at]
    created = np.array(ecreated + ["nan"], float)[at]
    made = np.array(made_here + [0], bool)[at] & (np.array(egen + [-2], np.int64)[at]
                                                   == generation)
    fresh = (at >= 0) & ~pd.Series(key).duplicated().to_numpy() & made
    return Digest(rowid, island, generation, status, [str(s) for s in statuses], fitness,
                  fresh, created)


def _parent_best(cur, args: dict, d: Digest, ids: pd.Index) -> np.ndarray:
    """Per individual, the fitness of its fittest parent (0 for one the run lacks or
    that has none, as report counts it)."""
    child, parent = _columns(cur, _PARENTS, args)
    best = np.zeros(len(d))
    if not child:
        return best
    fit = np.append(np.nan_to_num(d.fitness, nan=0.0), 0.0)
    np.maximum.at(best, _where(d, child), fit[ids.get_indexer(parent)])
    return best


def _operator_rows(cur, args: dict, d: Digest, ids: pd.Index, parent_best: np.ndarray,
                   path: str) -> list[dict]:
    op, kind, edit, pid = _columns(cur, _PROPOSALS, args)
    edit = np.array(edit, bool)
    at = ids.get_indexer(pid) if len(ids) else np.full(len(pid), -1)
    if ((at < 0) & edit).any():
        raise ArchiveError("a proposal names an individual that the archive lacks", path=path)
    equal = np.append(d.equal, False)[at] & edit
    fit = np.append(d.fitness, math.nan)[at]
    props = pd.DataFrame({"operator": [str(x) for x in op], "kind": [str(x) for x in kind],
                          "edit": edit, "accepted": equal,
                          "improved": equal & (fit > np.append(parent_best, 0.0)[at]),
                          "best": np.where(equal, fit, np.nan)})
    rows = []
    for (name, kind_), g in props.groupby(["operator", "kind"], sort=True):
        n, acc, imp = int(g["edit"].sum()), int(g["accepted"].sum()), int(g["improved"].sum())
        best = g["best"].max()
        rows.append({"operator": name, "kind": kind_, "proposals": len(g), "edits": n,
                     "no_proposal": len(g) - n, "accepted": acc, "improved": imp,
                     "acceptance_rate": acc / n if n else 0.0,
                     "improvement_rate": imp / n if n else 0.0,
                     "best_speedup": None if math.isnan(best) else float(best)})
    return rows
