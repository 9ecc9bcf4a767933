"""Damaged archives: every command that opens a run refuses it truthfully and changes no file.

The run directories are real: a run SIGKILLed after a committed generation (its
rows still in ``archive.db-wal``), and a finished one (checkpointed, no WAL). Each
is damaged one way; then ``resume``, ``report``, ``best``, ``run`` into it, and an
``ablate`` whose cell it is must exit 2 with one line saying what is wrong, and the
directory must be byte-identical afterwards, ``-wal`` and ``-shm`` included.
"""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from asmevo.cli import main
from tests.engine.helpers import ROOT, write_config


def _killed_run(base: Path) -> tuple[Path, Path]:
    cfg = write_config(base / "c.toml", generations=6)
    run = base / "run"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tests.engine.killable", "run", str(cfg),
                           str(run), "committed", "2", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (run / "archive.db-wal").stat().st_size > 0
    return cfg, run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("damaged")
    os.environ.setdefault("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    cfg, killed = _killed_run(base)
    finished = base / "finished"
    shutil.copytree(killed, finished)
    assert main(["resume", str(finished), "--quiet"]) == 0
    assert not (finished / "archive.db-wal").exists()
    return {"config": cfg, "killed": killed, "finished": finished}


def _garbage_wal(d: Path) -> None:
    wal = d / "archive.db-wal"
    wal.write_bytes(os.urandom(wal.stat().st_size))


def _wal_frame_garbage(d: Path) -> None:
    wal = d / "archive.db-wal"
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    at = 32 + (24 + page) + 24 + 100          # inside the second frame's page
    data[at:at + 64] = os.urandom(64)
    wal.write_bytes(bytes(data))


def _zero_bytes(d: Path) -> None:
    for f in ("archive.db-wal", "archive.db-shm"):
        (d / f).unlink(missing_ok=True)
    (d / "archive.db").write_bytes(b"")


def _truncated(d: Path) -> None:
    db = d / "archive.db"
    data = db.read_bytes()
    db.write_bytes(data[:len(data) // 2 // 4096 * 4096])


def _short_header(d: Path) -> None:
    db = d / "archive.db"
    db.write_bytes(db.read_bytes()[:60])


def _sql(db: Path, statement: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute(statement)
    conn.commit()
    conn.close()


def _newer_schema(d: Path) -> None:
    _sql(d / "archive.db", "UPDATE schema_version SET version = 99")


def _foreign(d: Path) -> None:
    (d / "archive.db").unlink()
    _sql(d / "archive.db", "CREATE TABLE users (name TEXT)")


def _directory(d: Path) -> None:
    (d / "archive.db").unlink()
    (d / "archive.db").mkdir()
    (d / "archive.db" / "x").write_text("x")


def _not_sqlite(d: Path) -> None:
    (d / "archive.db").write_bytes(b"garbage" * 1000)


# (damage, which run it starts from, what the message must say, does `run` refuse it too)
DAMAGES = {
    "garbage-wal": (_garbage_wal, "killed", "write-ahead log is damaged (its header", True),
    "garbage-in-wal-frame": (_wal_frame_garbage, "killed", "write-ahead log is damaged at frame",
                             True),
    "zero-byte-db": (_zero_bytes, "finished", "empty file (0 bytes)", False),
    "truncated-db": (_truncated, "finished", "truncated", True),
    "short-header": (_short_header, "finished", "truncated (60 bytes", True),
    "newer-schema": (_newer_schema, "finished", "schema version 99 is newer", True),
    "foreign-sqlite": (_foreign, "finished", "foreign SQLite database: it has tables (users)",
                       True),
    "directory": (_directory, "finished", "is a directory", True),
    "not-sqlite": (_not_sqlite, "finished", "not an SQLite database", True),
}


def _snapshot(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        out[rel] = "<dir>" if p.is_dir() else p.read_bytes()
    return out


def _damaged(runs, tmp_path, name) -> Path:
    damage, source, _, _ = DAMAGES[name]
    d = tmp_path / "run"
    shutil.copytree(runs[source], d)
    damage(d)
    return d


def _refused(capsys, argv, message) -> None:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert message in err, err


@pytest.mark.parametrize("name", DAMAGES)
@pytest.mark.parametrize("command", ["resume", "report", "best"])
def test_refused_commands_change_no_file(runs, tmp_path, capsys, name, command):
    d = _damaged(runs, tmp_path, name)
    before = _snapshot(d)
    argv = {"resume": ["resume", str(d), "--quiet"],
            "report": ["report", str(d), "--no-plots", "--out", str(tmp_path / "rep")],
            "best": ["best", str(d), "--out", str(tmp_path / "K1.co")]}[command]
    _refused(capsys, argv, DAMAGES[name][2])
    assert _snapshot(d) == before
    assert not (tmp_path / "rep").exists() and not (tmp_path / "K1.co").exists()


@pytest.mark.parametrize("name", [n for n, v in DAMAGES.items() if v[3]])
def test_run_into_a_damaged_directory_is_refused_and_changes_nothing(runs, tmp_path, capsys,
                                                                      name):
    d = _damaged(runs, tmp_path, name)
    before = _snapshot(d)
    _refused(capsys, ["run", str(runs["config"]), "--run-dir", str(d), "--quiet"],
             DAMAGES[name][2])
    assert _snapshot(d) == before


@pytest.mark.parametrize("source", ["killed", "finished"])
def test_run_into_a_used_directory_changes_nothing(runs, tmp_path, capsys, source):
    d = tmp_path / "run"
    shutil.copytree(runs[source], d)
    before = _snapshot(d)
    _refused(capsys, ["run", str(runs["config"]), "--run-dir", str(d), "--quiet"],
             "already holds a run")
    assert _snapshot(d) == before


def test_killed_run_with_intact_wal_still_resumes(runs, tmp_path):
    d = tmp_path / "run"
    shutil.copytree(runs["killed"], d)
    assert main(["resume", str(d), "--quiet"]) == 0
    conn = sqlite3.connect(d / "archive.db")
    assert conn.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    conn.close()


ABLATION = textwrap.dedent("""\
    [ablation]
    name = "dmg"
    seeds = [3]
    kernels = ["asm_copy"]
    size = "small"
    evaluations = 12

    [base.run]
    evaluator = "instruction-count"

    [base.engine]
    islands = 1
    population = 4
    generations = 3
    tournament = 2

    [sets.nop]
    nop_remove = 1.0
    """)


@pytest.mark.parametrize("name", ["garbage-wal", "foreign-sqlite", "truncated-db"])
def test_ablate_over_a_damaged_cell_changes_nothing(runs, tmp_path, capsys, name):
    cfg = tmp_path / "ab.toml"
    cfg.write_text(ABLATION)
    out = tmp_path / "out"
    cell = out / "cells" / "nop" / "asm_copy" / "seed3"
    cell.parent.mkdir(parents=True)
    damage, source, message, _ = DAMAGES[name]
    shutil.copytree(runs[source], cell)
    damage(cell)
    before = _snapshot(out)
    _refused(capsys, ["ablate", str(cfg), "--out", str(out), "--jobs", "1", "--no-plots"],
             message)
    assert _snapshot(out) == before


@pytest.mark.parametrize("source", ["killed", "finished"])
def test_report_and_best_read_without_writing(runs, tmp_path, capsys, source):
    """They open the archive read-only: even a killed run's WAL and -shm stay as they are."""
    d = tmp_path / "run"
    shutil.copytree(runs[source], d)
    before = _snapshot(d)
    assert main(["report", str(d), "--no-plots", "--out", str(tmp_path / "rep")]) == 0
    assert main(["best", str(d), "--out", str(tmp_path / "K1.co")]) == 0
    assert (tmp_path / "K1.co").read_bytes()[:4] == b"\x7fELF"
    assert _snapshot(d) == before
    capsys.readouterr()


def test_a_second_resume_is_refused_and_changes_nothing(runs, tmp_path, capsys):
    import fcntl
    d = tmp_path / "run"
    shutil.copytree(runs["killed"], d)
    before = _snapshot(d)
    fd = os.open(d / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)              # as a running `asmevo resume` holds it
    try:
        _refused(capsys, ["resume", str(d), "--quiet"], "in use by another asmevo process")
    finally:
        os.close(fd)
    assert _snapshot(d) == before


def test_a_closed_run_is_unlocked_though_a_forked_child_keeps_its_descriptor(runs, tmp_path):
    """A forked verification worker inherits the lock's descriptor and outlives the run:
    closing the run must still free the directory for the next open in this process."""
    from asmevo.engine.rundir import open_run
    d = tmp_path / "run"
    shutil.copytree(runs["finished"], d)
    run = open_run(d, evaluator=False)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child holds every inherited descriptor
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    try:
        run.close()
        again = open_run(d, evaluator=False)      # refused before: "in use by another ..."
        again.close()
    finally:
        os.close(w)
        os.waitpid(pid, 0)
