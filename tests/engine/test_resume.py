"""Kill a real run with SIGKILL before, during and after a migration; resume; compare.

The resumed archive must equal an uninterrupted run's by content: the same
individuals, proposals, verdicts, checkpoints (wall time aside) and blobs.
Evaluations committed by the killed generation must come back from the verdict
cache, counted once.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from tests.engine.helpers import ROOT, archive_content, assert_same_archive, write_config

MIGRATION_INTERVAL = 2


def _env(tmp_path_factory) -> dict:
    return os.environ | {"PYTHONPATH": str(ROOT),
                         "ASMEVO_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}


def _child(env, *args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "tests.engine.killable", *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    cfg = write_config(base / "c.toml", generations=6, migration_interval=MIGRATION_INTERVAL)
    env = _env(tmp_path_factory)
    _child(env, "run", cfg, base / "run")
    conn = sqlite3.connect(base / "run" / "archive.db")
    fresh = dict(conn.execute("SELECT generation, COUNT(*) FROM evaluations WHERE run_id = 1 "
                              "AND code_sha256 IS NOT NULL GROUP BY generation").fetchall())
    conn.close()
    # a migration generation with evaluations to interrupt
    gen = next(g for g in sorted(fresh) if g and g % MIGRATION_INTERVAL == 0 and fresh[g] >= 2)
    return {"config": cfg, "content": archive_content(base / "run"), "gen": gen, "env": env,
            "fresh": fresh}


@pytest.mark.parametrize("point", [
    ("evaluated", 0, 1),      # before: evaluations of the migration generation in flight
    ("migrated", 0, 1),       # during: migration computed, nothing of it committed
    ("committing", 0, 1),     # during: inside the generation's transaction, before COMMIT
    ("committed", 0, 1),      # after: the migration generation just committed
    ("evaluated", 1, 1),      # after: the next generation's evaluations in flight
], ids=["before", "during-migrated", "during-commit", "after-commit", "after-next-gen"])
def test_kill_and_resume_matches_uninterrupted(reference, tmp_path, point):
    event, offset, nth = point
    gen = reference["gen"] + offset
    run_dir = tmp_path / "run"
    killed = _child(reference["env"], "run", reference["config"], run_dir, event, gen, nth,
                    check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert f"event {event} {gen} {nth}" in killed.stdout
    resumed = _child(reference["env"], "resume", run_dir)
    got = archive_content(run_dir)
    assert_same_archive(got, reference["content"])
    if event == "evaluated":
        # the evaluation committed before the kill is served from the cache, not recomputed
        again = resumed.stdout.count(f"event evaluated {gen} ")
        assert again == reference["fresh"][gen] - nth


def test_kill_from_outside_at_any_instant(reference, tmp_path):
    """The parent SIGKILLs the child as soon as it reports an evaluation of the migration
    generation (the child keeps running meanwhile: the instant is not chosen by it)."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "tests.engine.killable", "run",
                             str(reference["config"]), str(run_dir)], cwd=ROOT,
                            env=reference["env"], stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith(f"event evaluated {reference['gen']}"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    _child(reference["env"], "resume", run_dir)
    assert_same_archive(archive_content(run_dir), reference["content"])


def test_double_kill_then_resume(reference, tmp_path):
    """Killed twice (once during a resume), still the same archive."""
    run_dir = tmp_path / "run"
    g = reference["gen"]
    _child(reference["env"], "run", reference["config"], run_dir, "evaluated", g, 1, check=False)
    again = _child(reference["env"], "resume", run_dir, "committing", g, 1, check=False)
    assert again.returncode == -signal.SIGKILL
    _child(reference["env"], "resume", run_dir)
    assert_same_archive(archive_content(run_dir), reference["content"])
