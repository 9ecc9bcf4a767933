"""Bounded reads of one run for the dashboard: a page of rows, one individual, a few fields.

Every reader here returns at most a fixed number of rows, each text field cut to
a fixed length (a listed reason or edit summary) or refused past a limit (an
individual's edits and verdict details, shown whole), and the large JSON fields
of a run (its config, its checkpoint) are parsed by SQLite (``json_extract``,
depth-limited) down to the part that is shown. So a request costs the same on an
archive of 200,000 individuals as on one of 20, and an archive crafted with huge
or deeply nested fields gets an :class:`ArchiveError` naming it, not a MemoryError
or a RecursionError.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Iterable

from asmevo.archive.errors import ArchiveError
from asmevo.archive.store import IMPROVED_CALLS_SQL

TEXT = 500                  # characters of a listed text field (a reason, an edit summary)
FIELD = 4 << 20             # characters of one field shown whole (edits, details, timing)
CONVERSATIONS = 200         # agent conversations listed at most (the newest)
TURNS = 200                 # calls and tries of one conversation shown at most
ANSWER = 20_000             # characters of one call's answer (its tool call) shown

_ROW = f"""
SELECT i.rowid AS rowid, i.ind_id, i.island, i.generation, i.slot, i.operator, i.n_edits,
       substr(i.parents, 1, {FIELD + 1}) AS parents,
       substr(i.edit_summary, 1, {TEXT}) AS edit_summary, e.status,
       substr(e.reason, 1, {TEXT}) AS reason, e.fitness, e.label
FROM individuals i JOIN runs r ON r.run_id = i.run_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
"""

_FULL = f"""
SELECT i.ind_id, i.island, i.generation, i.slot, i.operator, i.n_edits,
       substr(i.parents, 1, {FIELD + 1}) AS parents,
       substr(i.edit_summary, 1, {FIELD + 1}) AS edit_summary,
       substr(i.edits, 1, {FIELD + 1}) AS edits, i.code_sha256, e.status,
       substr(e.reason, 1, {FIELD + 1}) AS reason, substr(e.details, 1, {FIELD + 1}) AS details,
       substr(e.timing, 1, {FIELD + 1}) AS timing, e.fitness, e.label
FROM individuals i JOIN runs r ON r.run_id = i.run_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE i.run_id = ? AND i.ind_id = ?
"""

_RUN = """
SELECT run_id, name, kernel, status, stop_reason, k0_sha256, seed, eval_context,
       json_extract(config_json, '$.budget') AS budget,
       json_extract(config_json, '$.engine.generations') AS generations,
       json_extract(config_json, '$.run.timing') AS timing,
       json_extract(config_json, '$.run.device') AS device,
       json_extract(config_json, '$.run.target') AS target
FROM runs ORDER BY run_id DESC LIMIT 1
"""

_CHECKPOINT = """
SELECT generation, json_extract(state, '$.spent') AS spent FROM checkpoints
WHERE run_id = ? ORDER BY generation DESC LIMIT 1
"""

_SPEND = f"""
SELECT operator, COUNT(*) AS calls, SUM(tokens_in) AS tokens_in, SUM(tokens_out) AS tokens_out,
       SUM(cost) AS cost,
       COUNT(DISTINCT CASE WHEN call_id IN ({IMPROVED_CALLS_SQL.replace('?', ':run')})
             THEN json_array(generation, island, slot) END) AS improvements
FROM llm_usage WHERE run_id = :run GROUP BY operator ORDER BY operator
"""

_CONVERSATIONS = """
WITH last AS (SELECT generation, island, slot, operator FROM llm_usage
              WHERE run_id = :run AND turn IS NOT NULL
              GROUP BY generation, island, slot, operator
              ORDER BY generation DESC, island DESC, slot DESC LIMIT :limit)
SELECT u.generation, u.island, u.slot, u.operator, COUNT(*) AS turns,
       SUM(u.tokens_in + u.tokens_out + u.cache_read_tokens + u.cache_write_tokens) AS tokens,
       SUM(u.cost) AS cost,
       (SELECT COUNT(*) FROM agent_tries t WHERE t.run_id = :run AND t.generation = u.generation
          AND t.island = u.island AND t.slot = u.slot) AS tries,
       (SELECT COUNT(*) FROM agent_tries t WHERE t.run_id = :run AND t.status = 'equal'
          AND t.generation = u.generation AND t.island = u.island AND t.slot = u.slot)
          AS tries_equal,
       (SELECT MAX(t.speedup) FROM agent_tries t WHERE t.run_id = :run
          AND t.generation = u.generation AND t.island = u.island AND t.slot = u.slot)
          AS best_try,
       p.outcome, e.status, e.fitness
FROM last JOIN llm_usage u ON u.run_id = :run AND u.generation = last.generation
     AND u.island = last.island AND u.slot = last.slot AND u.operator = last.operator
JOIN runs r ON r.run_id = u.run_id
LEFT JOIN proposals p ON p.run_id = u.run_id AND p.generation = u.generation
                     AND p.island = u.island AND p.slot = u.slot
LEFT JOIN individuals i ON i.run_id = p.run_id AND i.ind_id = p.ind_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE u.turn IS NOT NULL
GROUP BY u.generation, u.island, u.slot, u.operator
ORDER BY u.generation, u.island, u.slot
"""


def _read(conn: sqlite3.Connection, sql: str, args, path: str) -> list[sqlite3.Row]:
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.DatabaseError as exc:
        raise ArchiveError(f"archive is corrupt or unreadable ({exc})", path=path) from exc


def _json(text, what: str, path: str):
    """A JSON field read cut to ``FIELD + 1`` characters; an error naming it where it was
    longer, is not JSON, or nests deeper than Python's parser goes."""
    if text is None:
        return None
    if not isinstance(text, str) or len(text) > FIELD:
        raise ArchiveError(f"{what}: not JSON text of at most {FIELD:,} characters",
                           path=path)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ArchiveError(f"{what}: not readable JSON ({str(exc)[:80]})", path=path) from None


def _parents(row: dict, path: str) -> list[str]:
    got = _json(row["parents"], f"the parents of individual {str(row['ind_id'])[:60]!r}", path)
    if not isinstance(got, list) or not all(isinstance(p, str) for p in got):
        raise ArchiveError(f"the parents of individual {str(row['ind_id'])[:60]!r}: not a "
                           "list of ids", path=path)
    return got


def rows(conn: sqlite3.Connection, rowids: Iterable[int], path: str) -> list[dict]:
    """Individuals by row id, in that order: what a list shows, text cut to :data:`TEXT`."""
    ids = [int(r) for r in rowids]
    if not ids:
        return []
    found = {r["rowid"]: dict(r) for r in _read(
        conn, _ROW + f" WHERE i.rowid IN ({','.join('?' * len(ids))})", ids, path)}
    out = []
    for rid in ids:
        if rid not in found:
            raise ArchiveError("the archive changed while it was read", path=path)
        row = found[rid]
        row["parents"] = _parents(row, path)
        out.append(row)
    return out


def by_ids(conn: sqlite3.Connection, run_id: int, ids: Iterable[str], path: str) -> dict:
    """Individuals of the run by id (those it has), as :func:`rows` gives them."""
    ids = list(dict.fromkeys(ids))
    out = {}
    for k in range(0, len(ids), 500):
        chunk = ids[k:k + 500]
        sql = _ROW + f" WHERE i.run_id = ? AND i.ind_id IN ({','.join('?' * len(chunk))})"
        for r in _read(conn, sql, (run_id, *chunk), path):
            row = dict(r)
            row["parents"] = _parents(row, path)
            out[row["ind_id"]] = row
    return out


def individual(conn: sqlite3.Connection, run_id: int, ind_id: str, path: str) -> dict:
    """One individual whole: edits, verdict details and timing parsed."""
    got = _read(conn, _FULL, (run_id, ind_id), path)
    if not got:
        raise ArchiveError(f"no individual {ind_id[:60]!r} in this run", path=path)
    row = dict(got[0])
    row["parents"] = _parents(row, path)
    for field in ("edits", "details", "timing"):
        row[field] = _json(row[field], f"the {field} of individual {ind_id[:60]!r}", path)
    for field in ("edit_summary", "reason"):
        if isinstance(row[field], str) and len(row[field]) > FIELD:
            raise ArchiveError(f"the {field} of individual {ind_id[:60]!r}: longer than "
                               f"{FIELD:,} characters", path=path)
    return row


def run(conn: sqlite3.Connection, path: str) -> dict:
    """The latest run's header, the parts of its config a page shows, and its last
    checkpoint's generation and spending."""
    got = _read(conn, _RUN, (), path)
    if not got:
        raise ArchiveError("archive holds no run", path=path)
    out = dict(got[0])
    out["budget"] = _json(out["budget"], "the run's budget", path) or {}
    last = _read(conn, _CHECKPOINT, (out["run_id"],), path)
    out["generation"] = last[0]["generation"] if last else None
    out["spent"] = _json(last[0]["spent"], "the last checkpoint's spending", path) \
        if last else {}
    for field in ("budget", "spent"):
        if not isinstance(out[field], dict):
            raise ArchiveError(f"the run's {field} is not a JSON object", path=path)
    return out


def llm_spend(conn: sqlite3.Connection, run_id: int, path: str) -> list[dict]:
    """report's ``llm_spend``: per operator and in all, calls, tokens, dollars,
    improvements (proposals whose candidate was equal and faster) and $ per improvement."""
    out = [dict(r) for r in _read(conn, _SPEND, {"run": run_id}, path)]
    if not out:
        return []
    total = {"operator": "(all)"} | {k: sum(r[k] or 0 for r in out) for k in out[0]
                                     if k != "operator"}
    for r in out + [total]:
        n = r["improvements"]
        r["cost_per_improvement"] = r["cost"] / n if n else None
    return out + [total]


def conversations(conn: sqlite3.Connection, run_id: int, path: str) -> list[dict]:
    """report's ``conversations``, the newest :data:`CONVERSATIONS` of them, oldest first."""
    out = [dict(r) for r in _read(conn, _CONVERSATIONS,
                                  {"run": run_id, "limit": CONVERSATIONS}, path)]
    for r in out:
        r["improved"] = r["status"] == "equal" and (r["fitness"] or 0) > 1.0
    return out


_TURNS = f"""
SELECT turn, operator, model, tokens_in, tokens_out, cache_read_tokens, cache_write_tokens,
       cost, substr(status, 1, {TEXT}) AS status, substr(reason, 1, {TEXT}) AS reason,
       substr(answer, 1, {ANSWER}) AS answer, length(answer) AS answer_chars, created
FROM llm_usage WHERE run_id = ? AND generation = ? AND island = ? AND slot = ?
ORDER BY turn, id LIMIT {TURNS}
"""

_TRIES = f"""
SELECT seq, operator, substr(parent, 1, {TEXT}) AS parent, substr(edit, 1, {ANSWER}) AS edit,
       substr(status, 1, {TEXT}) AS status, substr(reason, 1, {TEXT}) AS reason, speedup,
       substr(label, 1, {TEXT}) AS label, fresh
FROM agent_tries WHERE run_id = ? AND generation = ? AND island = ? AND slot = ?
ORDER BY seq LIMIT {TURNS}
"""


def conversation(conn: sqlite3.Connection, run_id: int, generation: int, island: int,
                 slot: int, path: str) -> dict:
    """One proposal's LLM calls (each turn: model, tokens, cost, status, its tool call as
    the archive keeps it) and the edits it tried through the engine with their verdicts;
    :data:`TURNS` of each at most, an answer or edit cut at :data:`ANSWER` characters."""
    where = (run_id, generation, island, slot)
    return {"calls": [dict(r) for r in _read(conn, _TURNS, where, path)],
            "tries": [dict(r) for r in _read(conn, _TRIES, where, path)]}
