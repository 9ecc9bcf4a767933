"""The archive database: SQLite in WAL mode, one schema, versioned, migrated in place.

Tables: ``runs``, ``individuals`` (lineage, edits, code hash), ``evaluations``
(the verdict cache: one row per evaluation context and candidate), ``proposals``
(every operator call, including the ones that proposed nothing), ``prompts`` and
``llm_usage`` (with ``turn``: an agent conversation's calls), ``agent_tries`` (every
edit an LLM agent tried through the engine) and ``checkpoints`` (engine state per
committed generation).
Views: ``notebook`` (recent attempts per kernel) and ``operator_stats``.

Durability: WAL with ``synchronous=NORMAL`` survives a killed process at any
instant (an OS crash may lose the last commits, never consistency). The engine
writes a generation's individuals and its checkpoint in one transaction, so a
checkpoint never names an individual that is not there.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from asmevo.archive.errors import ArchiveError
from asmevo.archive.validate import ReadView, check_files

APP_ID = "asmevo-archive"
VERDICT_INDEX = ("CREATE INDEX IF NOT EXISTS evaluations_verdicts ON evaluations"
                 " (eval_context, eval_key, status, fitness, run_id, generation, created)")
NO_VERDICT = "worker-died"      # an evaluation whose process was killed: replaced by a verdict
_EVALUATION_COLUMNS = ("code_sha256", "status", "reason", "details", "timing", "label", "device",
                       "speedup", "fitness", "seconds", "run_id", "generation", "created",
                       "worker")

# LLM calls whose proposal became an equal individual faster than K0
IMPROVED_CALLS_SQL = """
SELECT u.call_id FROM llm_usage u
JOIN individuals i ON i.run_id = u.run_id AND i.generation = u.generation
                  AND i.island = u.island AND i.slot = u.slot
JOIN runs r ON r.run_id = u.run_id
JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE u.run_id = ? AND e.status = 'equal' AND e.fitness > 1.0
"""


# per operator and model: what its proposals cost and earned (Archive.model_records)
MODEL_RECORDS_SQL = """
WITH calls AS (
    SELECT operator, model, generation, island, slot, COUNT(*) AS calls,
           SUM(tokens_in + tokens_out + cache_read_tokens + cache_write_tokens) AS tokens,
           SUM(cost) AS cost
    FROM llm_usage WHERE run_id = :run AND generation < :before
    GROUP BY operator, model, generation, island, slot)
SELECT c.operator, c.model, COUNT(*) AS proposals, SUM(c.calls) AS calls,
       SUM(c.tokens) AS tokens, SUM(c.cost) AS cost,
       SUM(COALESCE(e.status = 'equal', 0)) AS accepted,
       SUM(COALESCE(e.status = 'equal' AND e.fitness > COALESCE(pe.fitness, 0), 0))
           AS improvements,
       MAX(CASE WHEN e.status = 'equal' THEN e.fitness END) AS best
FROM calls c
JOIN runs r ON r.run_id = :run
LEFT JOIN proposals pr ON pr.run_id = :run AND pr.generation = c.generation
                      AND pr.island = c.island AND pr.slot = c.slot
LEFT JOIN individuals i ON i.run_id = :run AND i.ind_id = pr.ind_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
LEFT JOIN individuals p ON p.run_id = :run AND p.ind_id = json_extract(i.parents, '$[0]')
LEFT JOIN evaluations pe ON pe.eval_context = r.eval_context AND pe.eval_key = p.eval_key
GROUP BY c.operator, c.model ORDER BY c.operator, c.model
"""

# equal individuals faster than their first parent (Archive.improvements)
IMPROVEMENTS_SQL = """
SELECT i.ind_id, i.island, i.generation, i.slot, i.operator, i.edits, e.fitness, e.label,
       p.edits AS parent_edits, pe.fitness AS parent_fitness
FROM individuals i
JOIN runs r ON r.run_id = i.run_id
JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
JOIN individuals p ON p.run_id = i.run_id AND p.ind_id = json_extract(i.parents, '$[0]')
JOIN evaluations pe ON pe.eval_context = r.eval_context AND pe.eval_key = p.eval_key
WHERE i.run_id = ? AND i.generation >= ? AND i.generation < ? AND i.n_edits > 0
  AND e.status = 'equal' AND pe.status = 'equal' AND e.fitness > pe.fitness
ORDER BY i.generation, i.island, i.slot
"""

# individuals and agent tries of some generations (Archive.tried)
TRIED_SQL = """
SELECT i.generation, i.island, i.slot, -1 AS seq, i.operator, i.ind_id AS name, '[]' AS base,
       i.edits AS edits, e.status
FROM individuals i
JOIN runs r ON r.run_id = i.run_id
LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE i.run_id = :run AND i.generation >= :since AND i.generation < :before AND i.n_edits > 0
UNION ALL
SELECT t.generation, t.island, t.slot, t.seq, t.operator, t.parent AS name, p.edits AS base,
       t.edit AS edits, t.status
FROM agent_tries t JOIN individuals p ON p.run_id = t.run_id AND p.ind_id = t.parent
WHERE t.run_id = :run AND t.generation >= :since AND t.generation < :before
ORDER BY 1, 2, 3, 4
"""

_V1 = """
CREATE TABLE schema_version (app TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE runs (
    run_id       INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    created      REAL NOT NULL,
    seed         INTEGER NOT NULL,
    k0_sha256    TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    spec_path    TEXT NOT NULL,
    spec_size    TEXT NOT NULL,
    eval_context TEXT NOT NULL,
    config_toml  TEXT NOT NULL,
    config_json  TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'running',
    stop_reason  TEXT NOT NULL DEFAULT ''
);
CREATE TABLE evaluations (
    eval_context TEXT NOT NULL,
    eval_key     TEXT NOT NULL,
    code_sha256  TEXT,
    status       TEXT NOT NULL,
    reason       TEXT NOT NULL,
    details      TEXT NOT NULL,
    timing       TEXT,
    label        TEXT,
    device       TEXT,
    speedup      REAL,
    fitness      REAL NOT NULL,
    seconds      REAL NOT NULL,
    run_id       INTEGER,
    generation   INTEGER,
    created      REAL NOT NULL,
    PRIMARY KEY (eval_context, eval_key)
);
CREATE TABLE individuals (
    run_id       INTEGER NOT NULL REFERENCES runs(run_id),
    ind_id       TEXT NOT NULL,
    island       INTEGER NOT NULL,
    generation   INTEGER NOT NULL,
    slot         INTEGER NOT NULL,
    operator     TEXT NOT NULL,
    parents      TEXT NOT NULL,
    edits        TEXT NOT NULL,
    n_edits      INTEGER NOT NULL,
    edit_summary TEXT NOT NULL,
    code_sha256  TEXT,
    eval_key     TEXT NOT NULL,
    PRIMARY KEY (run_id, ind_id)
);
CREATE INDEX individuals_gen ON individuals(run_id, generation);
CREATE TABLE proposals (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    generation INTEGER NOT NULL,
    island     INTEGER NOT NULL,
    slot       INTEGER NOT NULL,
    operator   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    reason     TEXT NOT NULL,
    ind_id     TEXT,
    PRIMARY KEY (run_id, generation, island, slot)
);
CREATE TABLE prompts (prompt_sha256 TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE llm_usage (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs(run_id),
    generation         INTEGER NOT NULL,
    island             INTEGER NOT NULL,
    slot               INTEGER NOT NULL,
    operator           TEXT NOT NULL,
    call_id            TEXT NOT NULL,
    model              TEXT NOT NULL,
    prompt_sha256      TEXT REFERENCES prompts(prompt_sha256),
    tokens_in          INTEGER NOT NULL,
    tokens_out         INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost               REAL NOT NULL,
    status             TEXT NOT NULL DEFAULT '',
    reason             TEXT NOT NULL DEFAULT '',
    answer             TEXT,
    created            REAL NOT NULL,
    UNIQUE (run_id, call_id)
);
CREATE TABLE checkpoints (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    generation INTEGER NOT NULL,
    state      TEXT NOT NULL,
    created    REAL NOT NULL,
    PRIMARY KEY (run_id, generation)
);
CREATE VIEW notebook AS
    SELECT r.kernel, r.k0_sha256, i.run_id, i.generation, i.island, i.slot, i.ind_id,
           i.operator, i.edit_summary, i.edits, e.status, e.reason, e.speedup, e.label,
           e.fitness
    FROM individuals i
    JOIN runs r ON r.run_id = i.run_id
    JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
    WHERE i.n_edits > 0;
CREATE VIEW operator_stats AS
    SELECT p.run_id, p.operator, p.kind,
           COUNT(*)                                         AS proposals,
           SUM(p.outcome = 'edit')                          AS edits,
           SUM(e.status = 'equal')                          AS accepted,
           SUM(e.status = 'equal' AND e.fitness > 1.0)      AS faster_than_k0,
           MAX(CASE WHEN e.status = 'equal' THEN e.fitness END) AS best_fitness
    FROM proposals p
    JOIN runs r ON r.run_id = p.run_id
    LEFT JOIN individuals i ON i.run_id = p.run_id AND i.ind_id = p.ind_id
                           AND p.outcome = 'edit'
    LEFT JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
    GROUP BY p.run_id, p.operator, p.kind;
"""


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Statement by statement (``executescript`` would commit the open transaction)."""
    for stmt in script.split(";\n"):
        if stmt.strip():
            conn.execute(stmt)


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    _execute_script(conn, _V1)
    conn.execute("INSERT INTO schema_version (app, version) VALUES (?, 0)", (APP_ID,))


# Version 2: what LLM agents do. ``agent_tries`` holds every edit a conversation
# tried through the engine (its verdict is in ``evaluations``; a try the engine
# refused has none), ``llm_usage.turn`` numbers a conversation's calls (NULL for
# single-shot calls), and the notebook view names each attempt's evaluation.
_V2 = """
CREATE TABLE agent_tries (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    generation INTEGER NOT NULL,
    island     INTEGER NOT NULL,
    slot       INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    operator   TEXT NOT NULL,
    parent     TEXT NOT NULL,
    edit       TEXT NOT NULL,
    eval_key   TEXT,
    status     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    speedup    REAL,
    label      TEXT,
    fresh      INTEGER NOT NULL,
    PRIMARY KEY (run_id, generation, island, slot, seq)
);
CREATE INDEX agent_tries_parent ON agent_tries(run_id, parent);
ALTER TABLE llm_usage ADD COLUMN turn INTEGER;
DROP VIEW notebook;
CREATE VIEW notebook AS
    SELECT r.kernel, r.k0_sha256, i.run_id, i.generation, i.island, i.slot, i.ind_id,
           i.operator, i.edit_summary, i.edits, e.status, e.reason, e.speedup, e.label,
           e.fitness, i.eval_key
    FROM individuals i
    JOIN runs r ON r.run_id = i.run_id
    JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
    WHERE i.n_edits > 0;
"""


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    _execute_script(conn, _V2)


# Version 3: where an evaluation ran (``evaluations.worker``: a Dask worker's address;
# NULL where it ran on the run's own machine), for the report's per-worker table.
def _migrate_to_3(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE evaluations ADD COLUMN worker TEXT")


# version N -> the function that takes a version N-1 archive to N (inside a transaction)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_to_1,
                                                                2: _migrate_to_2,
                                                                3: _migrate_to_3}
SCHEMA_VERSION = max(MIGRATIONS)


def _schema_version(conn: sqlite3.Connection, path: Path, create: bool) -> int:
    """The archive's schema version (0: an empty database ``create`` may fill); refuses a
    foreign or too-new one."""
    tables = sorted(r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
    if "schema_version" not in tables:
        if not tables and create:
            return 0
        if not tables:
            raise ArchiveError("archive holds no tables (an empty SQLite database): no run "
                               "was ever committed to it", path=str(path))
        shown = ", ".join(tables[:3]) + (", ..." if len(tables) > 3 else "")
        raise ArchiveError(f"foreign SQLite database: it has tables ({shown}) but no asmevo "
                           "schema_version table; refusing to use it", path=str(path))
    rows = conn.execute("SELECT app, version FROM schema_version").fetchall()
    if len(rows) != 1 or rows[0][0] != APP_ID or not isinstance(rows[0][1], int):
        raise ArchiveError("foreign SQLite database: schema_version is not asmevo's",
                           path=str(path))
    version = int(rows[0][1])
    if version > SCHEMA_VERSION:
        raise ArchiveError(f"archive schema version {version} is newer than this asmevo "
                           f"understands ({SCHEMA_VERSION}); upgrade asmevo", path=str(path))
    return version


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    """Every migration after ``version``, each in its own transaction."""
    for v in range(version + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[v](conn)
            conn.execute("UPDATE schema_version SET version = ?", (v,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _viewed(path: Path, *, create: bool, check: bool, readonly: bool) -> ReadView:
    """A read-only view of an archive whose contents passed every check."""
    view = ReadView(path)
    try:
        if check:
            bad = view.conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if bad != "ok":
                raise ArchiveError(f"archive is corrupt ({bad})", path=str(path))
        version = _schema_version(view.conn, path, create)
        if readonly and version < SCHEMA_VERSION:
            # an older archive is read through a migrated private copy: the run's own
            # files stay as they are until a resume migrates them in place
            view.close()
            view = ReadView(path, private=True)
            view.conn.execute("PRAGMA query_only=0")
            _migrate(view.conn, version)
            view.conn.execute("PRAGMA query_only=1")
    except sqlite3.DatabaseError as exc:
        view.close()
        raise ArchiveError(f"archive is corrupt or not an SQLite database ({exc})",
                           path=str(path)) from exc
    except BaseException:
        view.close()
        raise
    return view


def archive_is_empty(path: str | Path) -> bool:
    """True where ``path`` holds no archive yet: no file, 0 bytes, or an SQLite database
    without tables (what a run killed while creating its archive leaves); an
    :class:`ArchiveError` where it holds something damaged or foreign. Changes nothing."""
    p = Path(path)
    if check_files(p, create=True):
        return True
    view = _viewed(p, create=True, check=False, readonly=False)
    try:
        return _schema_version(view.conn, p, True) == 0
    finally:
        view.close()


# SQLite's primary result codes of a write the machine refuses, not the archive
_RESOURCE = {3: "SQLITE_PERM", 8: "SQLITE_READONLY", 10: "SQLITE_IOERR", 13: "SQLITE_FULL",
             14: "SQLITE_CANTOPEN"}


def resource_error(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite failing for want of disk space, permission or I/O."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in _RESOURCE


class _Guard:
    """The archive's lock (re-entrant). A full disk, a read-only or unwritable run
    directory or an I/O error that SQLite meets while it is held leaves as one
    :class:`ArchiveError` naming the archive (the statement's transaction rolled back),
    not as a traceback from inside sqlite3."""

    def __init__(self, path: Path):
        self._lock, self._path = threading.RLock(), path

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, kind, exc, tb) -> bool:
        self._lock.release()
        if exc is not None and resource_error(exc):
            what = "write" if exc.sqlite_errorcode & 0xFF in (3, 8, 13) else "read or write"
            raise ArchiveError(f"cannot {what} the archive ({exc}); what was committed "
                               "before is intact", path=str(self._path)) from exc
        return False


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Archive:
    """One archive file. Thread-safe for the engine's few writers (one lock).

    Opening validates first and writes nothing until the archive passed: the files
    (:mod:`asmevo.archive.validate`), then the contents (integrity, asmevo's schema, its
    version) through a view that changes none of them. ``readonly`` keeps that view
    as the connection: reports and exports never write to a run's archive.
    """

    def __init__(self, path: str | Path, *, create: bool = False, check: bool = True,
                 readonly: bool = False):
        self.path = Path(path)
        self._lock = _Guard(self.path)
        self._view: ReadView | None = None
        fresh = check_files(self.path, create=create and not readonly)
        if not fresh:
            view = _viewed(self.path, create=create and not readonly, check=check,
                           readonly=readonly)
            if readonly:
                self._view, self.conn = view, view.conn
                return
            view.close()
        elif create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None,
                                        check_same_thread=False)
            self.conn.row_factory = sqlite3.Row
            mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise ArchiveError(f"cannot switch the archive to WAL mode (got {mode})",
                                   path=str(self.path))
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._open_schema(create)
        except sqlite3.OperationalError as exc:
            raise ArchiveError(f"cannot open the archive ({exc})", path=str(self.path)) from exc
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"archive is corrupt or not an SQLite database ({exc})",
                               path=str(self.path)) from exc

    # -- schema ------------------------------------------------------------------------

    def _open_schema(self, create: bool) -> None:
        version = _schema_version(self.conn, self.path, create)
        if version < SCHEMA_VERSION:
            self.migrate(version)
        # not part of the schema (readers work without it; a writer adds it once): the
        # verdict columns follow ``details`` in a row, so a reader of them all (the
        # dashboard's digest) would walk every row's overflow pages; here they are together
        self.conn.execute(VERDICT_INDEX)

    def migrate(self, version: int) -> None:
        """Apply every migration after ``version``, each in its own transaction."""
        with self._lock:
            _migrate(self.conn, version)

    @property
    def version(self) -> int:
        return int(self.conn.execute("SELECT version FROM schema_version").fetchone()[0])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception, a failed
        ``COMMIT`` (a full disk) included."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass        # SQLite rolled it back itself (disk full, I/O error)
                raise

    def close(self) -> None:
        with self._lock:
            if self._view is not None:
                self._view.close()
                self._view = None
            else:
                self.conn.close()

    def __enter__(self) -> "Archive":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- runs --------------------------------------------------------------------------

    def create_run(self, *, name: str, seed: int, k0_sha256: str, kernel: str, spec_path: str,
                   spec_size: str, eval_context: str, config_toml: str,
                   config_json: dict) -> int:
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO runs (name, created, seed, k0_sha256, kernel, spec_path, spec_size,"
                " eval_context, config_toml, config_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (name, time.time(), seed, k0_sha256, kernel, spec_path, spec_size, eval_context,
                 config_toml, _json(config_json)))
            return int(cur.lastrowid)

    def runs(self) -> list[dict]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM runs ORDER BY run_id")]

    def run(self, run_id: int | None = None) -> dict:
        """One run (the latest when ``run_id`` is None)."""
        if run_id is None:
            row = self.conn.execute("SELECT * FROM runs ORDER BY run_id DESC LIMIT 1").fetchone()
        else:
            row = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise ArchiveError(f"archive holds no run{'' if run_id is None else f' {run_id}'}",
                               path=str(self.path))
        return dict(row)

    def set_run_status(self, run_id: int, status: str, reason: str = "") -> None:
        with self.transaction() as c:
            c.execute("UPDATE runs SET status = ?, stop_reason = ? WHERE run_id = ?",
                      (status, reason, run_id))

    # -- evaluations (the verdict cache) ------------------------------------------------

    def put_evaluation(self, eval_context: str, eval_key: str, ev: dict, *,
                       run_id: int | None = None, generation: int | None = None,
                       conn: sqlite3.Connection | None = None) -> bool:
        """Store one evaluation unless one for this candidate exists; True when stored.

        ``ev`` is plain data, the shape of ``asmevo.verdict.Evaluation.to_json()``
        (``code_sha256``, ``verdict``, ``timing`` or None, ``seconds``, ``fitness``; a
        ``worker``, where a Dask worker made it).
        The first writer wins: two concurrent evaluations of one candidate leave
        one row; a row whose status is :data:`NO_VERDICT` (its process was killed:
        nothing is known of the candidate) is replaced. Without ``conn`` the write
        commits on its own.
        """
        t, v = ev["timing"], ev["verdict"]
        row = (eval_context, eval_key,
               ev["code_sha256"] if len(ev["code_sha256"]) == 64 else None,
               v["status"], v["reason"], _json(v["details"]),
               _json(t) if t else None, t["label"] if t else None,
               t["device"] if t else None, t["speedup"] if t else None, ev["fitness"],
               ev["seconds"], run_id, generation, time.time(), ev.get("worker"))
        sql = ("INSERT INTO evaluations (eval_context, eval_key, code_sha256, status,"
               " reason, details, timing, label, device, speedup, fitness, seconds, run_id,"
               " generation, created, worker) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
               " ON CONFLICT (eval_context, eval_key) DO UPDATE SET"
               + ", ".join(f" {c} = excluded.{c}" for c in _EVALUATION_COLUMNS)
               + f" WHERE evaluations.status = '{NO_VERDICT}'")
        with self._lock:
            cur = (conn or self.conn).execute(sql, row)
            return cur.rowcount == 1

    def evaluation_keys(self, eval_context: str) -> list[str]:
        """Every key with a stored evaluation in ``eval_context``."""
        with self._lock:
            return [r[0] for r in self.conn.execute(
                "SELECT eval_key FROM evaluations WHERE eval_context = ?", (eval_context,))]

    def evaluations(self, eval_context: str, keys: Iterable[str]) -> dict[str, dict]:
        """Stored evaluations by key: ``{"evaluation": plain data, "run_id", "generation"}``;
        the data has the shape of ``asmevo.verdict.Evaluation.to_json()``."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for r in self.conn.execute(
                        f"SELECT * FROM evaluations WHERE eval_context = ? AND eval_key IN ({marks})",
                        (eval_context, *chunk)):
                    out[r["eval_key"]] = {"evaluation": evaluation_data(r),
                                          "run_id": r["run_id"], "generation": r["generation"]}
        return out

    # -- individuals and proposals ------------------------------------------------------

    def put_individuals(self, conn: sqlite3.Connection, run_id: int, rows: list[dict]) -> None:
        conn.executemany(
            "INSERT INTO individuals (run_id, ind_id, island, generation, slot, operator, parents,"
            " edits, n_edits, edit_summary, code_sha256, eval_key) VALUES"
            " (:run_id,:ind_id,:island,:generation,:slot,:operator,:parents,:edits,:n_edits,"
            " :edit_summary,:code_sha256,:eval_key)",
            [r | {"run_id": run_id} for r in rows])

    def put_proposals(self, conn: sqlite3.Connection, run_id: int, rows: list[dict]) -> None:
        conn.executemany(
            "INSERT INTO proposals (run_id, generation, island, slot, operator, kind, outcome,"
            " reason, ind_id) VALUES (:run_id,:generation,:island,:slot,:operator,:kind,"
            " :outcome,:reason,:ind_id)", [r | {"run_id": run_id} for r in rows])

    def individuals(self, run_id: int, ids: Iterable[str] | None = None) -> dict[str, dict]:
        with self._lock:
            if ids is None:
                rows = self.conn.execute("SELECT * FROM individuals WHERE run_id = ?", (run_id,))
                return {r["ind_id"]: dict(r) for r in rows}
            ids = list(dict.fromkeys(ids))
            out = {}
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for r in self.conn.execute(
                        f"SELECT * FROM individuals WHERE run_id = ? AND ind_id IN ({marks})",
                        (run_id, *chunk)):
                    out[r["ind_id"]] = dict(r)
            return out

    def proposal_outcomes(self, run_id: int) -> list[tuple]:
        """``(outcome, reason, verdict status, verdict reason)`` of every proposal of a run
        (the verdict's fields None where the proposal made no evaluated individual)."""
        with self._lock:
            return [tuple(r) for r in self.conn.execute(
                "SELECT p.outcome, p.reason, e.status, e.reason FROM proposals p "
                "JOIN runs r ON r.run_id = p.run_id "
                "LEFT JOIN individuals i ON i.run_id = p.run_id AND i.ind_id = p.ind_id "
                "LEFT JOIN evaluations e ON e.eval_context = r.eval_context "
                "AND e.eval_key = i.eval_key WHERE p.run_id = ?", (run_id,))]

    def best_equal_fitness(self, run_id: int, eval_context: str) -> float | None:
        """The highest fitness of a run's equal individuals (None: none was equal)."""
        with self._lock:
            return self.conn.execute(
                "SELECT MAX(e.fitness) FROM individuals i JOIN evaluations e"
                " ON e.eval_context = ? AND e.eval_key = i.eval_key"
                " WHERE i.run_id = ? AND e.status = 'equal'",
                (eval_context, run_id)).fetchone()[0]

    # -- LLM usage ----------------------------------------------------------------------

    def put_prompt(self, text: str) -> str:
        sha = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            self.conn.execute("INSERT OR IGNORE INTO prompts (prompt_sha256, text) VALUES (?, ?)",
                              (sha, text))
        return sha

    def put_llm_usage(self, run_id: int, row: dict) -> bool:
        """One LLM call, committed at once: money spent is recorded even if the run dies.

        A call id already recorded for the run is not recorded again (False).
        """
        cols = ("generation", "island", "slot", "operator", "call_id", "model", "prompt_sha256",
                "tokens_in", "tokens_out", "cache_read_tokens", "cache_write_tokens", "cost",
                "status", "reason", "answer", "turn")
        row = {"status": "", "reason": "", "answer": None, "turn": None} | row
        with self._lock:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO llm_usage (run_id, {', '.join(cols)}, created)"
                f" VALUES (?, {', '.join('?' * len(cols))}, ?)",
                (run_id, *(row[c] for c in cols), time.time()))
            return cur.rowcount == 1

    def llm_call(self, run_id: int, call_id: str) -> dict | None:
        """A recorded call (with its answer), so a resumed run need not pay for it again."""
        with self._lock:
            r = self.conn.execute("SELECT * FROM llm_usage WHERE run_id = ? AND call_id = ?",
                                  (run_id, call_id)).fetchone()
        return dict(r) if r else None

    def llm_dollars(self, run_id: int) -> float:
        with self._lock:
            v = self.conn.execute("SELECT COALESCE(SUM(cost), 0) FROM llm_usage WHERE run_id = ?",
                                  (run_id,)).fetchone()[0]
        return float(v)

    def llm_costs(self, run_id: int) -> list[float]:
        """Every recorded call's cost (the engine sums them exactly, in any order)."""
        with self._lock:
            return [float(r[0]) for r in self.conn.execute(
                "SELECT cost FROM llm_usage WHERE run_id = ?", (run_id,))]

    def llm_usage(self, run_id: int) -> list[dict]:
        """Every recorded LLM call of a run, as stored."""
        with self._lock:
            return [dict(r) for r in self.conn.execute(
                "SELECT * FROM llm_usage WHERE run_id = ?", (run_id,))]

    def improved_calls(self, run_id: int) -> list[str]:
        """Call ids of LLM calls whose proposal became an equal, faster individual."""
        with self._lock:
            return [r[0] for r in self.conn.execute(IMPROVED_CALLS_SQL, (run_id,))]

    def prompt(self, sha256: str) -> str | None:
        r = self.conn.execute("SELECT text FROM prompts WHERE prompt_sha256 = ?",
                              (sha256,)).fetchone()
        return r[0] if r else None

    def model_records(self, run_id: int, before_generation: int | None = None) -> list[dict]:
        """Per operator and model, over the generations before ``before_generation`` (all
        when None): proposals (a conversation's calls are one), calls, tokens, cost, and
        how many proposals made an equal candidate (``accepted``), one faster than its
        first parent (``improvements``), the best such fitness (``best``)."""
        before = 2 ** 62 if before_generation is None else before_generation
        with self._lock:
            return [dict(r) for r in self.conn.execute(MODEL_RECORDS_SQL,
                                                       {"run": run_id, "before": before})]

    def improvements(self, run_id: int, since: int, before: int) -> list[dict]:
        """Individuals born in generations [since, before) that are equal to K0 and faster
        than their first parent, with that parent's edits and fitness, in birth order."""
        with self._lock:
            return [dict(r) for r in self.conn.execute(IMPROVEMENTS_SQL, (run_id, since, before))]

    def tried(self, run_id: int, since: int, before: int) -> list[dict]:
        """Every candidate of generations [since, before): individuals (``base`` "[]",
        ``edits`` their whole history) and agent tries (``base`` the parent's edits,
        ``edits`` the try's), with their verdict's status, in birth order."""
        with self._lock:
            return [dict(r) for r in self.conn.execute(TRIED_SQL, {"run": run_id, "since": since,
                                                                   "before": before})]

    # -- agent tries --------------------------------------------------------------------

    def put_tries(self, conn: sqlite3.Connection, run_id: int, rows: list[dict]) -> None:
        """A generation's tried edits, in its transaction (a killed generation redoes them)."""
        conn.executemany(
            "INSERT INTO agent_tries (run_id, generation, island, slot, seq, operator, parent,"
            " edit, eval_key, status, reason, speedup, label, fresh) VALUES (:run_id,"
            " :generation, :island, :slot, :seq, :operator, :parent, :edit, :eval_key, :status,"
            " :reason, :speedup, :label, :fresh)", [r | {"run_id": run_id} for r in rows])

    def lineage_tries(self, run_id: int, ind_id: str, *, before_generation: int,
                      limit: int) -> list[dict]:
        """Tries of conversations on ``ind_id`` or any of its ancestors (every parent,
        mates included), committed before ``before_generation``, newest first."""
        sql = """
            WITH RECURSIVE lineage(id) AS (
                SELECT ?
                UNION
                SELECT p.value FROM lineage l
                JOIN individuals i ON i.run_id = ? AND i.ind_id = l.id, json_each(i.parents) p)
            SELECT t.* FROM agent_tries t
            WHERE t.run_id = ? AND t.generation < ? AND t.parent IN (SELECT id FROM lineage)
            ORDER BY t.generation DESC, t.island, t.slot, t.seq DESC LIMIT ?"""
        with self._lock:
            return [dict(r) for r in self.conn.execute(
                sql, (ind_id, run_id, run_id, before_generation, limit))]

    # -- checkpoints --------------------------------------------------------------------

    def put_checkpoint(self, conn: sqlite3.Connection, run_id: int, generation: int,
                       state: dict) -> None:
        conn.execute("INSERT INTO checkpoints (run_id, generation, state, created)"
                     " VALUES (?, ?, ?, ?)", (run_id, generation, _json(state), time.time()))

    def last_checkpoint(self, run_id: int) -> tuple[int, dict] | None:
        with self._lock:
            r = self.conn.execute("SELECT generation, state FROM checkpoints WHERE run_id = ?"
                                  " ORDER BY generation DESC LIMIT 1", (run_id,)).fetchone()
        if r is None:
            return None
        try:
            return int(r[0]), json.loads(r[1])
        except json.JSONDecodeError as exc:
            raise ArchiveError(f"checkpoint of generation {r[0]} is not JSON ({exc})",
                               path=str(self.path)) from exc

    # -- notebook -----------------------------------------------------------------------

    def notebook(self, kernel: str, *, limit: int = 20, before_generation: int | None = None,
                 run_id: int | None = None) -> list[dict]:
        """The most recent attempts on ``kernel`` (any run), newest first."""
        sql = "SELECT * FROM notebook WHERE kernel = ?"
        args: list[Any] = [kernel]
        if run_id is not None and before_generation is not None:
            sql += " AND NOT (run_id = ? AND generation >= ?)"
            args += [run_id, before_generation]
        sql += " ORDER BY run_id DESC, generation DESC, island, slot LIMIT ?"
        with self._lock:
            return [dict(r) for r in self.conn.execute(sql, (*args, limit))]


def evaluation_data(r: sqlite3.Row | dict) -> dict:
    """One stored evaluation as plain data (``Evaluation.from_json`` reads it back)."""
    timing = json.loads(r["timing"]) if r["timing"] else None
    return {"code_sha256": r["code_sha256"] or r["eval_key"],
            "verdict": {"status": r["status"], "reason": r["reason"],
                        "details": json.loads(r["details"])},
            "timing": timing, "seconds": float(r["seconds"]), "fitness": r["fitness"]}
