"""Pandas readers over an archive, for reports and comparisons.

Rows come back in birth order (generation, island, slot), the order the
engine committed them, so "best so far against evaluations" is a cumulative
max down a column.
"""
from __future__ import annotations

import json

import pandas as pd

from asmevo.archive.store import Archive, ArchiveError

_INDIVIDUALS = """
SELECT i.run_id, i.ind_id, i.island, i.generation, i.slot, i.operator, i.parents, i.n_edits,
       i.edit_summary, i.edits, i.code_sha256, i.eval_key, e.status, e.reason, e.speedup,
       e.fitness, e.label, e.device, e.details, e.timing, e.run_id AS eval_run,
       e.generation AS eval_generation, e.created AS eval_created
FROM individuals i
JOIN runs r ON r.run_id = i.run_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE i.run_id = ?
ORDER BY i.generation, i.island, i.slot
"""


def _run_id(archive: Archive, run_id: int | None) -> int:
    return int(archive.run(run_id)["run_id"])


def individuals(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """Every individual of a run with its verdict; ``first`` marks a fresh evaluation."""
    rid = _run_id(archive, run_id)
    df = pd.read_sql_query(_INDIVIDUALS, archive.conn, params=(rid,))
    df["parents"] = df["parents"].map(json.loads)
    # the individual whose evaluation was new (not served from the cache)
    df["first"] = ~df.duplicated("eval_key") & (df["eval_run"] == rid) \
        & (df["eval_generation"] == df["generation"])
    return df


def evaluations(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """Evaluations this run made, in the order they were committed."""
    rid = _run_id(archive, run_id)
    return pd.read_sql_query("SELECT * FROM evaluations WHERE run_id = ? ORDER BY rowid",
                             archive.conn, params=(rid,))


def workers(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """Per Dask worker: the evaluations this run made there, their seconds in all and
    on average, and how many were equal (empty where every evaluation ran on the run's
    own machine)."""
    rid = _run_id(archive, run_id)
    return pd.read_sql_query(
        "SELECT worker, COUNT(*) AS evaluations, ROUND(SUM(seconds), 2) AS seconds,"
        " ROUND(AVG(seconds), 3) AS mean_seconds, SUM(status = 'equal') AS equal"
        " FROM evaluations WHERE run_id = ? AND worker IS NOT NULL"
        " GROUP BY worker ORDER BY worker", archive.conn, params=(rid,))


def operator_stats(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """Per operator: proposals, edits, acceptance and improvement rates, best speedup.

    Accepted: the candidate was equal to K0. Improved: equal and faster than the
    parent it was made from.
    """
    rid = _run_id(archive, run_id)
    props = pd.read_sql_query("SELECT operator, kind, outcome, ind_id FROM proposals"
                              " WHERE run_id = ?", archive.conn, params=(rid,))
    inds = individuals(archive, rid).set_index("ind_id")
    fit = inds["fitness"].to_dict()
    rows = []
    for (name, kind), grp in props.groupby(["operator", "kind"], sort=True):
        made = grp[grp["outcome"] == "edit"]["ind_id"]
        children = inds.loc[made]
        accepted = children["status"] == "equal"
        improved = accepted & (children["fitness"] > children["parents"].map(
            lambda ps: max(fit.get(p, 0.0) for p in ps)))
        n = len(children)
        rows.append({"operator": name, "kind": kind, "proposals": len(grp), "edits": n,
                     "no_proposal": int((grp["outcome"] != "edit").sum()),
                     "accepted": int(accepted.sum()), "improved": int(improved.sum()),
                     "acceptance_rate": accepted.sum() / n if n else 0.0,
                     "improvement_rate": improved.sum() / n if n else 0.0,
                     "best_speedup": float(children.loc[accepted, "fitness"].max())
                     if accepted.any() else float("nan")})
    return pd.DataFrame(rows)


def best_individual(archive: Archive, run_id: int | None = None) -> pd.Series:
    """The fittest equal individual (first born among ties)."""
    df = individuals(archive, run_id)
    eq = df[df["status"] == "equal"]
    if eq.empty:
        raise ArchiveError("the run has no accepted candidate yet", path=str(archive.path))
    return eq.loc[eq["fitness"].idxmax()]


def _band(timing_json) -> str:
    """A modeled speedup's band under the calibration's parameter ensemble, as text
    ("lo-hi", with "artifact" where its low end is not above 1); "" when it has none."""
    t = json.loads(timing_json) if timing_json else None
    band = t.get("band") if t else None
    if not band:
        return ""
    return f"{band[0]:.3f}-{band[1]:.3f}" + ("" if band[0] > 1.0 else " (artifact)")


def best_per_kernel(archive: Archive) -> pd.DataFrame:
    """For every kernel in the archive: the best speedup, its run and individual."""
    rows = []
    for run in archive.runs():
        try:
            b = best_individual(archive, run["run_id"])
        except ArchiveError:
            continue
        rows.append({"kernel": run["kernel"], "run": run["name"], "run_id": run["run_id"],
                     "ind_id": b["ind_id"], "speedup": b["fitness"], "label": b["label"],
                     "band": _band(b["timing"]), "device": b["device"],
                     "edits": int(b["n_edits"])})
    df = pd.DataFrame(rows, columns=["kernel", "run", "run_id", "ind_id", "speedup", "label",
                                     "band", "device", "edits"])
    if df.empty:
        return df
    return df.loc[df.groupby("kernel")["speedup"].idxmax()].reset_index(drop=True)


def lineage(archive: Archive, ind_id: str, run_id: int | None = None) -> pd.DataFrame:
    """``ind_id`` and its first-parent ancestors back to K0, oldest first.

    The first parent is the one whose edits the child extends, so this is the
    individual's edit history with the fitness each step reached.
    """
    df = individuals(archive, run_id).set_index("ind_id")
    chain = []
    cur: str | None = ind_id
    while cur is not None:
        if cur not in df.index:
            raise ArchiveError(f"lineage names individual {cur!r} that the archive lacks")
        row = df.loc[cur]
        chain.append({"ind_id": cur, "generation": int(row["generation"]),
                      "island": int(row["island"]), "operator": row["operator"],
                      "edit": row["edit_summary"], "status": row["status"],
                      "fitness": row["fitness"], "parents": row["parents"]})
        cur = row["parents"][0] if row["parents"] else None
    return pd.DataFrame(list(reversed(chain)))


def best_curve(archive: Archive, by: str, run_id: int | None = None) -> pd.DataFrame:
    """Best speedup so far against fresh evaluations, per ``by`` ("island" or "operator")."""
    df = individuals(archive, run_id)
    df = df[df["n_edits"] > 0].copy() if by == "operator" else df.copy()
    df["evaluations"] = df["first"].cumsum()
    df["score"] = df["fitness"].where(df["status"] == "equal", 0.0)
    df["best"] = df.groupby(by)["score"].cummax()
    return df[[by, "evaluations", "best"]]


def llm_spend(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """LLM spend per operator: calls, tokens, cost, improvements, $ per improvement.

    An improvement is a proposal (generation, island, slot) whose candidate was equal
    to K0 and faster, counted once however many calls its conversation made.
    """
    rid = _run_id(archive, run_id)
    usage = pd.read_sql_query("SELECT * FROM llm_usage WHERE run_id = ?", archive.conn,
                              params=(rid,))
    if usage.empty:
        return pd.DataFrame()
    improved = set(archive.improved_calls(rid))
    usage["improved"] = usage["call_id"].isin(improved)
    usage["proposal"] = list(zip(usage["generation"], usage["island"], usage["slot"]))
    g = usage.groupby("operator").agg(
        calls=("call_id", "count"), tokens_in=("tokens_in", "sum"),
        tokens_out=("tokens_out", "sum"), cost=("cost", "sum")).reset_index()
    wins = usage[usage["improved"]].groupby("operator")["proposal"].nunique()
    g["improvements"] = [int(wins.get(op, 0)) for op in g["operator"]]
    total = g.drop(columns="operator").sum().to_frame().T
    total.insert(0, "operator", "(all)")
    g = pd.concat([g, total], ignore_index=True)
    g["cost_per_improvement"] = [c / n if n else float("nan")
                                 for c, n in zip(g["cost"], g["improvements"])]
    return g


def llm_models(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """What each model earned, per operator: proposals (a conversation is one), calls,
    tokens, cost, how many proposals made an equal candidate (``accepted``) and one
    faster than its parent (``improvements``), improvements per dollar, the best fitness.
    What an ensemble's bandit weighs (``[llm] ensemble = "bandit"``)."""
    rid = _run_id(archive, run_id)
    df = pd.DataFrame(archive.model_records(rid), columns=[
        "operator", "model", "proposals", "calls", "tokens", "cost", "accepted",
        "improvements", "best"])
    if df.empty:
        return df
    df["improvements_per_dollar"] = [n / c if c else float("nan")
                                     for n, c in zip(df["improvements"], df["cost"])]
    return df


_CONVERSATIONS = """
SELECT u.generation, u.island, u.slot, u.operator, COUNT(*) AS turns,
       SUM(u.tokens_in + u.tokens_out + u.cache_read_tokens + u.cache_write_tokens) AS tokens,
       SUM(u.cost) AS cost,
       (SELECT COUNT(*) FROM agent_tries t WHERE t.run_id = u.run_id
          AND t.generation = u.generation AND t.island = u.island AND t.slot = u.slot) AS tries,
       (SELECT COUNT(*) FROM agent_tries t WHERE t.run_id = u.run_id AND t.status = 'equal'
          AND t.generation = u.generation AND t.island = u.island AND t.slot = u.slot)
          AS tries_equal,
       (SELECT MAX(t.speedup) FROM agent_tries t WHERE t.run_id = u.run_id
          AND t.generation = u.generation AND t.island = u.island AND t.slot = u.slot)
          AS best_try,
       p.outcome, e.status, e.fitness
FROM llm_usage u
JOIN runs r ON r.run_id = u.run_id
LEFT JOIN proposals p ON p.run_id = u.run_id AND p.generation = u.generation
                     AND p.island = u.island AND p.slot = u.slot
LEFT JOIN individuals i ON i.run_id = p.run_id AND i.ind_id = p.ind_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE u.run_id = ? AND u.turn IS NOT NULL
GROUP BY u.generation, u.island, u.slot, u.operator
ORDER BY u.generation, u.island, u.slot
"""


def conversations(archive: Archive, run_id: int | None = None) -> pd.DataFrame:
    """One row per agent conversation: turns, tokens, spend, tries (and how many were
    equal, the best tried speedup), and what became of its proposal (``improved``:
    its candidate is equal to K0 and faster). Conversations of an uncommitted
    generation have no proposal yet (outcome empty)."""
    rid = _run_id(archive, run_id)
    df = pd.read_sql_query(_CONVERSATIONS, archive.conn, params=(rid,))
    df["improved"] = (df["status"] == "equal") & (df["fitness"] > 1.0)
    return df
