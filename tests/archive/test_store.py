"""The archive refuses what is not an archive, keeps one verdict per candidate, migrates."""
from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from asmevo.archive import Archive, ArchiveError, BlobStore, SCHEMA_VERSION
from asmevo.archive import store as store_mod
from asmevo.verdict import Evaluation, Timing, Verdict

SHA = "ab" * 32


def _ev(speed: float = 2.0) -> dict:
    """An evaluation as the archive takes it: plain data (``Evaluation.to_json()``)."""
    return Evaluation(SHA, Verdict("equal", "", {"sets": 3}),
                      Timing("modeled", "emulator", 2.0, 2.0 / speed, 0.01, "cycles"),
                      1.5).to_json()


def test_new_archive_has_schema_version_and_wal(tmp_path):
    with Archive(tmp_path / "a.db", create=True) as a:
        assert a.version == SCHEMA_VERSION
        assert a.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in a.conn.execute("SELECT name FROM sqlite_master")}
        assert {"runs", "individuals", "evaluations", "proposals", "prompts", "llm_usage",
                "checkpoints", "notebook", "operator_stats", "schema_version"} <= tables


def test_missing_archive_is_an_error_unless_created(tmp_path):
    with pytest.raises(ArchiveError, match="no archive"):
        Archive(tmp_path / "none.db")


def test_garbage_file_is_refused_and_left_alone(tmp_path):
    p = tmp_path / "a.db"
    p.write_bytes(b"this is a text file, not a database\n" * 10)
    with pytest.raises(ArchiveError, match="not an asmevo archive"):
        Archive(p, create=True)
    assert p.read_bytes().startswith(b"this is a text file")


def test_foreign_sqlite_database_is_refused(tmp_path):
    p = tmp_path / "a.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(ArchiveError, match="foreign SQLite database"):
        Archive(p, create=True)
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE schema_version (app TEXT, version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES ('someone-else', 1)")
    conn.commit()
    conn.close()
    with pytest.raises(ArchiveError, match="not asmevo's"):
        Archive(p)


def test_corrupt_archive_is_refused(tmp_path):
    p = tmp_path / "a.db"
    with Archive(p, create=True) as a:
        for i in range(300):
            a.put_evaluation("ctx", f"{i:064x}", _ev())
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(p.read_bytes())
    for off in range(4096 + 100, len(data), 4096):       # trash every page after the first
        data[off:off + 200] = b"\xff" * 200
    p.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="corrupt"):
        Archive(p)


def test_truncated_header_is_refused(tmp_path):
    p = tmp_path / "a.db"
    with Archive(p, create=True):
        pass
    p.write_bytes(p.read_bytes()[:50])
    with pytest.raises(ArchiveError):
        Archive(p)


def test_newer_schema_is_refused(tmp_path):
    p = tmp_path / "a.db"
    with Archive(p, create=True) as a:
        a.conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(ArchiveError, match="newer"):
        Archive(p)


def test_migrations_run_in_order(tmp_path, monkeypatch):
    p = tmp_path / "a.db"
    with Archive(p, create=True):
        pass

    def add_notes(conn):
        conn.execute("ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT ''")

    monkeypatch.setitem(store_mod.MIGRATIONS, SCHEMA_VERSION + 1, add_notes)
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Archive(p) as a:
        assert a.version == SCHEMA_VERSION + 1
        cols = [r[1] for r in a.conn.execute("PRAGMA table_info(runs)")]
        assert "notes" in cols


def test_evaluation_round_trip_and_first_writer_wins(tmp_path):
    with Archive(tmp_path / "a.db", create=True) as a:
        assert a.put_evaluation("ctx", SHA, _ev(2.0), run_id=None, generation=3)
        assert not a.put_evaluation("ctx", SHA, _ev(9.0))
        got = a.evaluations("ctx", [SHA, "missing"])
        assert list(got) == [SHA]
        assert got[SHA]["evaluation"] == _ev(2.0)        # the same plain data back
        ev = Evaluation.from_json(got[SHA]["evaluation"])
        assert ev.fitness == pytest.approx(2.0) and ev.verdict.details == {"sets": 3}
        assert got[SHA]["generation"] == 3
        assert a.evaluations("other-context", [SHA]) == {}


def _writer(path: str, barrier, speed: float) -> None:
    a = Archive(path)
    barrier.wait()
    a.put_evaluation("ctx", SHA, _ev(speed))
    a.close()


def test_two_concurrent_evaluations_of_one_candidate_store_one(tmp_path):
    p = tmp_path / "a.db"
    Archive(p, create=True).close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_writer, args=(str(p), barrier, 2.0 + i)) for i in range(4)]
    for q in procs:
        q.start()
    for q in procs:
        q.join(60)
        assert q.exitcode == 0
    with Archive(p) as a:
        assert a.conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 1


def test_concurrent_threads_share_one_connection(tmp_path):
    with Archive(tmp_path / "a.db", create=True) as a:
        threads = [threading.Thread(target=a.put_evaluation, args=("ctx", SHA, _ev(s)))
                   for s in (2.0, 3.0, 4.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert a.conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 1


def test_transaction_rolls_back_on_error(tmp_path):
    with Archive(tmp_path / "a.db", create=True) as a:
        rid = a.create_run(name="r", seed=1, k0_sha256=SHA, kernel="k", spec_path="s",
                           spec_size="small", eval_context="ctx", config_toml="",
                           config_json={})
        with pytest.raises(RuntimeError):
            with a.transaction() as conn:
                a.put_checkpoint(conn, rid, 0, {"x": 1})
                raise RuntimeError("killed")
        assert a.last_checkpoint(rid) is None


def test_blobs_are_content_addressed_and_checked(tmp_path):
    b = BlobStore(tmp_path / "blobs")
    sha = b.put(b"\x7fELF code")
    p = b.path(sha)
    assert p.parent.name == sha[:2] and p.name == f"{sha}.co"
    assert b.put(b"\x7fELF code") == sha and b.get(sha) == b"\x7fELF code"
    b.put_assembly(sha, "s_endpgm\n")
    assert b.get_assembly(sha) == "s_endpgm\n"
    p.write_bytes(b"tampered")
    with pytest.raises(ArchiveError, match="does not match"):
        b.get(sha)
    with pytest.raises(ArchiveError, match="no code object"):
        b.get("cd" * 32)
    with pytest.raises(ArchiveError, match="not a sha256"):
        b.path("../../etc/passwd")
    assert not list((tmp_path / "blobs").rglob("*.tmp"))


def test_sweep_removes_what_a_killed_writer_left_and_keeps_a_live_ones(tmp_path):
    """Seen in CI: `asmevo ablate` SIGKILLed mid-write left `.<sha>.s.<pid>.tmp`
    beside the blobs; reopening the run sweeps it (a live writer's file stays)."""
    import os
    import subprocess
    import sys

    b = BlobStore(tmp_path / "blobs")
    sha = b.put(b"\x7fELF code")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    dead = b.path(sha, ".s").with_name(f".{sha}.s.{gone}.tmp")
    live = b.path(sha, ".s").with_name(f".{sha}.s.{os.getpid()}.tmp")
    dead.write_text("half")
    live.write_text("being written")
    assert b.sweep() == 1
    assert not dead.exists() and live.exists() and b.get(sha) == b"\x7fELF code"


def test_sweep_removes_what_a_zombie_writer_left(tmp_path):
    """Seen in CI: the SIGKILLed writer was a zombie still (its parent gone, and nobody
    reaping it yet), which answers a signal 0 like a live process: its file is swept."""
    import os
    import time

    b = BlobStore(tmp_path / "blobs")
    sha = b.put(b"\x7fELF code")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(pid, 0)         # a zombie answers: what the sweep must not take as alive
        tmp = b.path(sha, ".s").with_name(f".{sha}.s.{pid}.tmp")
        tmp.write_text("half")
        assert b.sweep() == 1 and not tmp.exists()
    finally:
        os.waitpid(pid, 0)
