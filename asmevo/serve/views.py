"""What the dashboard shows, as JSON-ready values computed from one archive.

Each function takes an open (private copy of an) archive and returns plain
dicts and lists; the web layer only serialises them, so everything here is
tested without a server. Tables go through :mod:`archive.queries`, the same
readers ``asmevo report`` uses, so the page and the report cannot disagree.
"""
from __future__ import annotations

import json
import math
import time

import pandas as pd

from archive import queries
from archive.store import Archive, ArchiveError

RATE_WINDOW_S = 300.0      # "evaluations per minute" over the last five minutes of a run
MAX_ROWS = 400             # individuals listed at most (the best first, then the newest)


def _num(v):
    """A JSON-safe number (NaN and inf become None)."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records")) if not df.empty else []


def summary(archive: Archive) -> dict:
    """Run header, budget and spend, per-island progress and the best individual."""
    run = archive.run()
    rid = int(run["run_id"])
    config = json.loads(run["config_json"])
    inds = queries.individuals(archive, rid)
    last = archive.last_checkpoint(rid)
    spent = last[1]["spent"] if last else {}
    budget = config.get("budget", {})
    left = {k: (None if budget.get(k) is None else _num(budget[k] - spent.get(k, 0.0)))
            for k in ("evaluations", "wall_seconds", "llm_dollars")}
    out = {"name": run["name"], "kernel": run["kernel"], "status": run["status"],
           "stop_reason": run["stop_reason"], "k0_sha256": run["k0_sha256"],
           "seed": run["seed"], "generation": last[0] if last else None,
           "generations": config.get("engine", {}).get("generations"),
           "individuals": int(len(inds)), "evaluations": int(inds["first"].sum()),
           "timing": config.get("run", {}).get("timing"),
           "device": config.get("run", {}).get("device"),
           "budget": budget, "spent": spent, "budget_left": left,
           "islands": islands(inds), "best": None}
    try:
        best = queries.best_individual(archive, rid)
        out["best"] = {"ind_id": best["ind_id"], "speedup": _num(best["fitness"]),
                       "label": best["label"], "n_edits": int(best["n_edits"])}
    except ArchiveError:
        pass
    return out


def islands(inds: pd.DataFrame) -> list[dict]:
    """Per island: evaluations, accepted, acceptance, best, evaluations per minute."""
    out = []
    now = time.time()
    for island, grp in inds.groupby("island", sort=True):
        fresh = grp[grp["first"]]
        created = fresh["eval_created"].dropna()
        recent = created[created >= (created.max() if len(created) else now) - RATE_WINDOW_S]
        span = (recent.max() - recent.min()) if len(recent) > 1 else 0.0
        equal = grp["status"] == "equal"
        out.append({"island": int(island), "evaluations": int(len(fresh)),
                    "accepted": int((fresh["status"] == "equal").sum()),
                    "acceptance": _num((fresh["status"] == "equal").mean()) if len(fresh) else None,
                    "best": _num(grp.loc[equal, "fitness"].max()) if equal.any() else None,
                    "evals_per_minute": _num(60.0 * (len(recent) - 1) / span) if span > 0 else None})
    return out


def curves(archive: Archive) -> dict:
    """Best speedup so far against run-wide fresh evaluations, one series per island."""
    curve = queries.best_curve(archive, "island")
    return {"series": [{"island": int(k), "evaluations": g["evaluations"].astype(int).tolist(),
                        "best": [_num(v) for v in g["best"]]}
                       for k, g in curve.groupby("island", sort=True)]}


def operators(archive: Archive) -> dict:
    """Per-operator proposals/accepted/improved/best and LLM spend (report's tables)."""
    ops = queries.operator_stats(archive)
    spend = queries.llm_spend(archive)
    convs = queries.conversations(archive)
    clean = lambda rows: [{k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()}
                          for r in rows]
    return {"operators": clean(_records(ops)), "llm_spend": clean(_records(spend)),
            "conversations": clean(_records(convs.tail(MAX_ROWS)))}


def individuals(archive: Archive) -> list[dict]:
    """The individuals worth listing: the best equal ones, then every rejected one, newest first."""
    df = queries.individuals(archive)
    cols = ["ind_id", "generation", "island", "operator", "n_edits", "edit_summary",
            "status", "reason", "fitness", "label"]
    eq = df[df["status"] == "equal"].sort_values("fitness", ascending=False)
    other = df[df["status"] != "equal"].sort_values(["generation", "island", "slot"],
                                                     ascending=False)
    rows = pd.concat([eq.head(MAX_ROWS // 2), other.head(MAX_ROWS // 2)])
    out = _records(rows[cols])
    for r in out:
        r["fitness"] = _num(r["fitness"])
    return out


def individual(archive: Archive, ind_id: str) -> dict:
    """One individual in full: lineage fields, edits, and its verdict with every detail."""
    df = queries.individuals(archive)
    hit = df[df["ind_id"] == ind_id]
    if hit.empty:
        raise ArchiveError(f"no individual {ind_id!r} in this run")
    r = hit.iloc[0]
    loads = lambda s: json.loads(s) if isinstance(s, str) and s else None
    return {"ind_id": ind_id, "generation": int(r["generation"]), "island": int(r["island"]),
            "operator": r["operator"], "parents": list(r["parents"]),
            "edit_summary": r["edit_summary"], "edits": loads(r["edits"]) or [],
            "code_sha256": r["code_sha256"],
            "verdict": {"status": r["status"], "reason": r["reason"],
                        "details": loads(r["details"]) or {}},
            "timing": loads(r["timing"]), "speedup": _num(r["fitness"]), "label": r["label"]}


def lineage(archive: Archive, ind_id: str | None = None, max_nodes: int = 200) -> dict:
    """The ancestry of ``ind_id`` (default: the best) as a tree: every parent, mates included."""
    df = queries.individuals(archive).set_index("ind_id")
    if ind_id is None:
        try:
            ind_id = queries.best_individual(archive)["ind_id"]
        except ArchiveError:
            return {"root": None, "nodes": {}}
    nodes: dict[str, dict] = {}
    todo = [ind_id]
    while todo and len(nodes) < max_nodes:
        cur = todo.pop()
        if cur in nodes:
            continue
        if cur not in df.index:
            raise ArchiveError(f"lineage names individual {cur!r} that the archive lacks")
        row = df.loc[cur]
        nodes[cur] = {"ind_id": cur, "operator": row["operator"], "generation": int(row["generation"]),
                      "island": int(row["island"]), "edit_summary": row["edit_summary"],
                      "status": row["status"], "reason": row["reason"],
                      "speedup": _num(row["fitness"]), "parents": list(row["parents"])}
        todo.extend(row["parents"])
    return {"root": ind_id, "nodes": nodes, "truncated": bool(todo)}
