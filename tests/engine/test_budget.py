"""The evaluation budget is a hard limit: never one evaluation more, serial, parallel, resumed.

A generation that would evaluate more candidates than the budget still pays for
evaluates the first ones in submission order; the rest are not born (their slots
keep the parent, the proposal is recorded with outcome ``budget``). The order is
the one a resumed generation rebuilds, so kill and resume still give the
uninterrupted run's archive.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from asmevo.engine.command import open_engine
from asmevo.engine.rundir import create_run
from tests.engine.helpers import ROOT, archive_content, assert_same_archive, write_config
from tests.engine.test_engine import CountingEvaluator


def _spent(run_dir) -> tuple[int, int, int]:
    """(spent.evaluations of the last checkpoint, evaluation rows of built candidates,
    proposals left unevaluated by the budget)."""
    conn = sqlite3.connect(run_dir / "archive.db")
    state = json.loads(conn.execute("SELECT state FROM checkpoints ORDER BY generation DESC"
                                    ).fetchone()[0])
    rows = conn.execute("SELECT COUNT(*) FROM evaluations WHERE code_sha256 IS NOT NULL"
                        ).fetchone()[0]
    unpaid = conn.execute("SELECT COUNT(*) FROM proposals WHERE outcome = 'budget'"
                          ).fetchone()[0]
    conn.close()
    return state["spent"]["evaluations"], rows, unpaid


@pytest.mark.parametrize("budget", [1, 2, 6, 7, 13])
def test_serial_run_never_exceeds_the_budget(tmp_path, budget):
    run = create_run(write_config(tmp_path / "c.toml", generations=30,
                                  budget=f"evaluations = {budget}"), tmp_path / "run")
    ev = run.evaluator
    run.evaluator = CountingEvaluator(ev.k0_path, ev.kernel, ev.k0_sha256, ev.context_key, [])
    engine = open_engine(run)
    assert engine.run() == "budget.evaluations"
    run.close()
    spent, rows, _ = _spent(tmp_path / "run")
    assert len(run.evaluator.calls) == spent == rows == budget


def _child(env, *args):
    return subprocess.run([sys.executable, "-m", "tests.engine.killable", *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory):
    """A budget of 6 where generation 0 alone would evaluate 8 (K0 + 7 offspring)."""
    base = tmp_path_factory.mktemp("budget")
    env = os.environ | {"PYTHONPATH": str(ROOT),
                        "ASMEVO_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}
    cfg = write_config(base / "c.toml", generations=10, population=5,
                       budget="evaluations = 17")
    proc = _child(env, "run", cfg, base / "serial")
    assert proc.returncode == 0, proc.stderr
    return {"env": env, "config": cfg, "content": archive_content(base / "serial"),
            "base": base, "stdout": proc.stdout}


def test_the_budget_cuts_a_generation_short(budgeted):
    spent, rows, unpaid = _spent(budgeted["base"] / "serial")
    assert spent == rows == 17 and unpaid > 0


def test_parallel_run_matches_serial_and_the_budget(budgeted, tmp_path):
    cfg = write_config(tmp_path / "c.toml", generations=10, population=5, n_jobs=2,
                       budget="evaluations = 17")
    proc = _child(budgeted["env"], "run", cfg, tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    assert _spent(tmp_path / "run")[:2] == (17, 17)
    assert_same_archive(archive_content(tmp_path / "run"), budgeted["content"])


@pytest.mark.parametrize("event, nth", [("evaluated", 1), ("committed", 1)])
def test_kill_and_resume_keep_the_budget(budgeted, tmp_path, event, nth):
    gens = [int(ln.split()[2]) for ln in budgeted["stdout"].splitlines()
            if ln.startswith("event committed")]
    last = max(gens)                     # the generation the budget cut short
    killed = _child(budgeted["env"], "run", budgeted["config"], tmp_path / "run",
                    event, last, nth)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = _child(budgeted["env"], "resume", tmp_path / "run")
    assert resumed.returncode == 0, resumed.stderr
    assert _spent(tmp_path / "run")[:2] == (17, 17)
    assert_same_archive(archive_content(tmp_path / "run"), budgeted["content"])
