"""What the dashboard shows, as JSON-ready values computed from one archive.

Each function takes a :class:`View` (an open private view of an archive and its
run's :class:`asmevo.archive.digest.Digest`) and returns plain dicts and lists; the web
layer only serialises them, so everything here is tested without a server.
Counts, curves and rates come from the digest (numbers only, built once per
archive state); text comes a page at a time from :mod:`asmevo.archive.pages`, so no
request reads a whole table. The definitions are those of :mod:`asmevo.archive.queries`,
what ``asmevo report`` prints (``tests/serve/test_views.py`` compares them).
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field

import numpy as np

from asmevo.archive import digest, pages
from asmevo.archive.digest import Digest
from asmevo.archive.store import Archive, ArchiveError
from asmevo.engine.outcomes import refusal_reasons
from asmevo.verdict import coverage_label

RATE_WINDOW_S = 300.0      # "evaluations per minute" over the last five minutes of a run
PAGE = 100                 # individuals per page
CURVE_POINTS = 2000        # points of one island's curve at most (its steps, thinned)
LINEAGE_NODES = 200        # ancestors shown at most
ORDERS = ("best", "newest")


@dataclass
class View:
    """One state of a run's archive: the connection, its path, the run and its digest
    (and, once asked for, its operator table: a pass of its own, so the other panels do
    not wait for it)."""

    archive: Archive
    run: dict
    digest: Digest
    _operators: list[dict] | None = None
    _refusals: list[dict] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def operators(self) -> list[dict]:
        with self._lock:
            if self._operators is None:
                self._operators = digest.operators(self.conn, int(self.run["run_id"]),
                                                   self.digest, self.path)
            return self._operators

    def refusals(self) -> list[dict]:
        """Per operator, its top reasons for proposing nothing (what ``report`` lists)."""
        with self._lock:
            if self._refusals is None:
                self._refusals = refusal_reasons(self.conn, int(self.run["run_id"]))
            return self._refusals

    @property
    def path(self) -> str:
        return str(self.archive.path)

    @property
    def conn(self):
        return self.archive.conn


def _num(v):
    """A JSON-safe number (NaN, inf and anything that is not a number become None)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    f = float(v)
    return None if math.isnan(f) or math.isinf(f) else f


def _text(v) -> str | None:
    """A field shown as text (the archive may hold any type where text belongs)."""
    return None if v is None else str(v)


def summary(v: View) -> dict:
    """Run header, budget and spend, per-island progress and the best individual."""
    run, d = v.run, v.digest
    budget, spent = run["budget"], run["spent"]
    left = {}
    for k in ("evaluations", "wall_seconds", "llm_dollars"):
        b, s = _num(budget.get(k)), _num(spent.get(k, 0.0))
        left[k] = None if b is None or s is None else _num(b - s)
    out = {"name": _text(run["name"]), "kernel": _text(run["kernel"]),
           "status": _text(run["status"]), "stop_reason": _text(run["stop_reason"]),
           "k0_sha256": _text(run["k0_sha256"]), "seed": _text(run["seed"]),
           "generation": _num(run["generation"]), "generations": _num(run["generations"]),
           "individuals": len(d), "evaluations": int(d.fresh.sum()),
           "timing": _text(run["timing"]), "device": _text(run["device"]),
           "budget": {str(k): _num(x) for k, x in budget.items()},
           "spent": {str(k): _num(x) for k, x in spent.items()}, "budget_left": left,
           "islands": islands(d), "best": None}
    b = d.best()
    if b is not None:
        row = pages.rows(v.conn, [d.rowid[b]], v.path)[0]
        full = pages.individual(v.conn, int(run["run_id"]), row["ind_id"], v.path)
        out["best"] = {"ind_id": _text(row["ind_id"]), "speedup": _num(d.fitness[b]),
                       "label": _text(row["label"]), "n_edits": _num(row["n_edits"]),
                       "coverage": coverage_label(full["details"])}
    return out


def islands(d: Digest) -> list[dict]:
    """Per island: evaluations, accepted, acceptance, best, evaluations per minute."""
    out = []
    equal = d.equal
    for island in np.unique(d.island):
        mine = d.island == island
        fresh = mine & d.fresh
        created = d.created[fresh & ~np.isnan(d.created)]
        rate = None
        if len(created):
            recent = created[created >= created.max() - RATE_WINDOW_S]
            span = recent.max() - recent.min()
            rate = _num(60.0 * (len(recent) - 1) / span) if span > 0 else None
        n = int(fresh.sum())
        accepted = int((fresh & equal).sum())
        best = d.fitness[mine & equal]
        out.append({"island": int(island), "evaluations": n, "accepted": accepted,
                    "acceptance": accepted / n if n else None,
                    "best": _num(np.nanmax(best)) if len(best) and not np.isnan(best).all()
                    else None,
                    "evals_per_minute": rate})
    return out


def curves(v: View) -> dict:
    """Best speedup so far against run-wide fresh evaluations, one series per island: the
    points where an island's best changes, its first and its last (the steps of report's
    ``best_curve``; thinned to :data:`CURVE_POINTS` where there are more)."""
    d = v.digest
    evaluations = np.cumsum(d.fresh)
    score = d.score
    series = []
    for island in np.unique(d.island):
        at = np.flatnonzero(d.island == island)
        best = np.maximum.accumulate(score[at])
        keep = np.ones(len(at), bool)
        keep[1:-1] = best[1:-1] != best[:-2]
        idx = np.flatnonzero(keep)
        thinned = len(idx) > CURVE_POINTS
        if thinned:
            idx = np.unique(np.append(idx[np.linspace(0, len(idx) - 1, CURVE_POINTS).astype(int)],
                                      len(at) - 1))
        series.append({"island": int(island),
                       "evaluations": evaluations[at[idx]].astype(int).tolist(),
                       "best": [_num(x) for x in best[idx]], "thinned": bool(thinned)})
    return {"series": series}


def _plain(x):
    """A table cell as JSON: text, an integer, a truth value, a finite number or None."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    return _num(x) if isinstance(x, (float, np.floating)) else _text(x)


def _clean(rows: list[dict]) -> list[dict]:
    return [{str(k): _plain(x) for k, x in r.items()} for r in rows]


def operators(v: View) -> dict:
    """Per-operator proposals/accepted/improved/best and LLM spend (report's tables)."""
    rid = int(v.run["run_id"])
    return {"operators": _clean(v.operators()),
            "refusals": [{"operator": _text(r["operator"]), "without_edit": r["without_edit"],
                          "reasons": _clean(r["reasons"])} for r in v.refusals()],
            "llm_spend": _clean(pages.llm_spend(v.conn, rid, v.path)),
            "conversations": _clean(pages.conversations(v.conn, rid, v.path))}


ANSWER_DEPTH = 20          # nesting of an answer shown as a value (deeper: its text)


def _shallow(value, depth: int = ANSWER_DEPTH) -> bool:
    if depth < 0:
        return False
    if isinstance(value, dict):
        return all(_shallow(x, depth - 1) for x in value.values())
    if isinstance(value, list):
        return all(_shallow(x, depth - 1) for x in value)
    return True


def _answer(text):
    """A call's answer (the tool call's input, JSON) as a value, or its text if it is not
    JSON or nests deeper than :data:`ANSWER_DEPTH`."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if _shallow(value) else text


def conversation(v: View, generation: int, island: int, slot: int) -> dict:
    """One LLM proposal's turns (model, tokens, cost, status, tool call) and tries
    (edit, verdict, speedup), as the archive keeps them."""
    c = pages.conversation(v.conn, int(v.run["run_id"]), generation, island, slot, v.path)
    calls = [_clean([r])[0] | {"answer": _answer(r["answer"])} for r in c["calls"]]
    return {"generation": generation, "island": island, "slot": slot, "calls": calls,
            "tries": [_clean([t])[0] | {"edit": _answer(t["edit"])} for t in c["tries"]],
            "cost": _num(sum(_num(r["cost"]) or 0.0 for r in c["calls"]))}


def _listed(row: dict) -> dict:
    return {"ind_id": _text(row["ind_id"]), "generation": _num(row["generation"]),
            "island": _num(row["island"]), "operator": _text(row["operator"]),
            "n_edits": _num(row["n_edits"]), "edit_summary": _text(row["edit_summary"]),
            "status": _text(row["status"]), "reason": _text(row["reason"]),
            "fitness": _num(row["fitness"]), "label": _text(row["label"])}


def individuals(v: View, order: str = "best", offset: int = 0, limit: int = PAGE) -> dict:
    """One page of individuals: ``best``, the accepted ones fittest first (the first born
    among ties); ``newest``, the rejected ones, newest first."""
    if order not in ORDERS:
        raise ArchiveError(f"no order {order[:40]!r} (best or newest)")
    d = v.digest
    if order == "best":
        pick = np.flatnonzero(d.equal)
        pick = pick[np.lexsort((pick, -np.nan_to_num(d.fitness[pick], nan=-np.inf)))]
    else:
        pick = np.flatnonzero(~d.equal)[::-1]
    offset, limit = max(0, int(offset)), max(1, min(PAGE, int(limit)))
    chosen = pick[offset:offset + limit]
    return {"order": order, "offset": offset, "total": int(len(pick)),
            "rows": [_listed(r) for r in pages.rows(v.conn, d.rowid[chosen], v.path)]}


def individual(v: View, ind_id: str) -> dict:
    """One individual in full: lineage fields, edits, and its verdict with every detail."""
    r = pages.individual(v.conn, int(v.run["run_id"]), ind_id, v.path)
    return {"ind_id": _text(r["ind_id"]), "generation": _num(r["generation"]),
            "island": _num(r["island"]), "operator": _text(r["operator"]),
            "parents": r["parents"], "edit_summary": _text(r["edit_summary"]),
            "edits": r["edits"] if isinstance(r["edits"], list) else [],
            "code_sha256": _text(r["code_sha256"]),
            "verdict": {"status": _text(r["status"]), "reason": _text(r["reason"]),
                        "details": r["details"] if isinstance(r["details"], dict) else {},
                        "coverage": (coverage_label(r["details"]) if r["status"] == "equal"
                                     else None)},
            "timing": r["timing"], "speedup": _num(r["fitness"]), "label": _text(r["label"])}


def lineage(v: View, ind_id: str | None = None, max_nodes: int = LINEAGE_NODES) -> dict:
    """The ancestry of ``ind_id`` (default: the best) as a tree: every parent, mates
    included; read a generation of ancestors at a time, :data:`LINEAGE_NODES` at most."""
    if ind_id is None:
        b = v.digest.best()
        if b is None:
            return {"root": None, "nodes": {}}
        ind_id = pages.rows(v.conn, [v.digest.rowid[b]], v.path)[0]["ind_id"]
    rid = int(v.run["run_id"])
    nodes: dict[str, dict] = {}
    frontier = [ind_id]
    while frontier and len(nodes) < max_nodes:
        want = list(dict.fromkeys(i for i in frontier if i not in nodes))
        take, rest = want[:max_nodes - len(nodes)], want[max_nodes - len(nodes):]
        found = pages.by_ids(v.conn, rid, take, v.path)
        parents = []
        for i in take:
            if i not in found:
                raise ArchiveError(f"lineage names individual {str(i)[:60]!r} that the "
                                   "archive lacks", path=v.path)
            row = found[i]
            nodes[i] = _listed(row) | {"speedup": _num(row["fitness"]),
                                       "parents": row["parents"]}
            parents.extend(row["parents"])
        frontier = rest + [p for p in parents if p not in nodes]
    return {"root": ind_id, "nodes": nodes, "truncated": bool(frontier)}

