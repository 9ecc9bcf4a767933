"""Workers killed as the OOM killer kills them (SIGKILL): the evaluating child of one
candidate, a pool worker, or either of them twice for one candidate.

Killed once, the call runs again in a fresh process and the run's archive equals an
undisturbed run's; killed twice, the candidate is judged ``worker-died``, which is not
kept as its own verdict: the next time it is met, it is judged again.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from asmevo.verdict import Evaluation, Verdict
from tests.engine.helpers import ROOT, archive_content, assert_same_archive, write_config


# -- the evaluating child (asmevo.verify.isolate) ------------------------------------------

def _killed_once(marker: str) -> str:
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return f"ran in {os.getpid()}"


def _killed_always() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _aborts() -> None:
    import faulthandler
    faulthandler.disable()          # the test's own handler would print the abort's stack
    os.abort()


_SET_UP = []


def _set_up() -> None:
    _SET_UP.append(1)


def _killed_once_reports_setup(marker: str) -> int:
    _killed_once(marker)
    return len(_SET_UP)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_an_evaluating_child_killed_once_runs_the_call_again(tmp_path, method):
    from asmevo.verify.isolate import Worker, run_isolated
    w = Worker(method)
    try:
        got = w.call(_killed_once, str(tmp_path / "m1"), timeout=60)
        assert got.startswith("ran in ") and w.started == 2
        again = w.call(_killed_always, timeout=60)
        assert again.status == "worker-died" and "twice" in again.reason
        assert again.details["exit_code"] == -signal.SIGKILL and w.started == 3
        crash = w.call(_aborts, timeout=60)        # the candidate's own crash: not retried
        assert crash.status == "crash" and w.started == 4
    finally:
        w.close()
    assert run_isolated(_killed_once, str(tmp_path / "m2"), timeout=60, method=method) \
        .startswith("ran in ")
    assert run_isolated(_killed_always, timeout=60, method=method).status == "worker-died"


def test_the_retry_runs_in_a_process_set_up_like_the_killed_one(tmp_path):
    """K0's state is set up (Worker.setup) in every fresh process before the call that
    is run again, not inside that call's time limit."""
    from asmevo.verify.isolate import Worker
    w = Worker("fork")
    try:
        w.setup("k0", _set_up, timeout=60)
        assert w.call(_killed_once_reports_setup, str(tmp_path / "m"), timeout=60) == 1
        assert w.started == 2 and "k0" in w.warm
    finally:
        w.close()


# -- pool workers (asmevo.engine.parallel) -------------------------------------------------

def _evaluator():
    from asmevo.engine.evaluator import InstructionCountEvaluator
    return InstructionCountEvaluator.create(ROOT / "experiments/kernels/asm_copy/"
                                            "asm_copy.gfx942.co", "asm_copy")


def _edits(n: int):
    from asmevo.edits import Edit
    return tuple(Edit("asm_copy", k, k + 1, ("s_nop 0",)) for k in range(n))


@pytest.mark.parametrize("pool_kind", ["joblib", "fork"])
def test_a_killed_pool_worker_is_replaced_and_its_tasks_sent_again(tmp_path, pool_kind):
    from asmevo.engine.parallel import ForkPool, JoblibPool, evaluate_task, judge_task
    from tests.engine.dying import DyingEvaluator
    base = _evaluator()
    ev = DyingEvaluator(base, str(tmp_path / "die"), nth=2)
    pool = JoblibPool(2, ev) if pool_kind == "joblib" else ForkPool(2, ev)
    try:
        items = [(_edits(n), b"") for n in range(1, 5)]
        got = list(pool.map(judge_task, ev, items))
        want = [judge_task(base, item) for item in items]
        same = lambda r: (r[0], r[1], r[2], r[3].verdict, r[3].timing)   # not its seconds
        assert [same(g) for g in got] == [same(w) for w in want]
        assert pool.renewed == 1 and (tmp_path / "die" / "killed").exists()
        twice = DyingEvaluator(base, str(tmp_path / "twice"), nth=1, again=True)
        dead = next(iter(pool.map(evaluate_task, twice, [_edits(3)])))
        assert isinstance(dead, Evaluation) and dead.verdict.status == "worker-died"
        assert "died twice" in dead.verdict.reason
        # the pool works on, on a third executor
        assert next(iter(pool.map(evaluate_task, base, [_edits(2)]))).verdict == \
            evaluate_task(base, _edits(2)).verdict
        assert pool.renewed == 3
    finally:
        pool.close()


# -- whole runs: the archive of a run with a killed worker is an undisturbed run's ---------

def _run(env, *args, die: str = "", folder: Path | None = None) -> subprocess.CompletedProcess:
    extra = {"ASMEVO_TEST_DIE": die, "ASMEVO_TEST_DIE_DIR": str(folder)} if die else {}
    proc = subprocess.run([sys.executable, "-m", "tests.engine.killable", *map(str, args)],
                          cwd=ROOT, env=env | extra, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return os.environ | {"PYTHONPATH": str(ROOT),
                         "ASMEVO_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}


@pytest.fixture(scope="module")
def references(tmp_path_factory, env):
    """Undisturbed runs, one per evaluator (instruction-count: loky workers; verify on
    the emulator: forked workers, each with its forked evaluating child)."""
    out = {}
    for evaluator in ("instruction-count", "verify"):
        base = tmp_path_factory.mktemp(f"reference-{evaluator}")
        cfg = write_config(base / "c.toml", generations=3, population=4, n_jobs=2)
        if evaluator == "verify":
            cfg.write_text(cfg.read_text().replace('evaluator = "instruction-count"',
                                                   'evaluator = "verify"'))
        _run(env, "run", cfg, base / "run")
        out[evaluator] = (cfg, archive_content(base / "run"))
    return out


@pytest.mark.parametrize("evaluator, die", [
    ("instruction-count", "worker:6"),
    ("verify", "worker:6"),
    ("verify", "isolation:6"),
], ids=["loky-worker", "forked-worker", "evaluating-child"])
def test_a_run_whose_worker_is_killed_matches_an_undisturbed_run(references, env, tmp_path,
                                                                  evaluator, die):
    cfg, want = references[evaluator]
    _run(env, "run", cfg, tmp_path / "run", die=die, folder=tmp_path / "die")
    assert (tmp_path / "die" / "killed").exists(), "no worker was killed"
    assert_same_archive(archive_content(tmp_path / "run"), want)


def test_a_pool_worker_killed_from_outside(references, env, tmp_path):
    """As the OOM killer does it: the test kills a loky worker of a live run (not the run,
    not loky's resource tracker) when the run reports an evaluation."""
    cfg, want = references["instruction-count"]
    proc = subprocess.Popen([sys.executable, "-m", "tests.engine.killable", "run", str(cfg),
                             str(tmp_path / "run")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = None
    for line in proc.stdout:
        if killed is None and line.startswith("event evaluated 1 "):
            workers = [p for p in _children(proc.pid) if b"resource_tracker" not in p[1]]
            if workers:
                killed = workers[0][0]
                os.kill(killed, signal.SIGKILL)
    err = proc.stderr.read()
    proc.wait(timeout=120)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert killed is not None, "no pool worker to kill"
    assert_same_archive(archive_content(tmp_path / "run"), want)


def _children(pid: int) -> list[tuple[int, bytes]]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append((int(d.name), (d / "cmdline").read_bytes()))
        except (OSError, ValueError, IndexError):
            continue
    return out


def test_worker_died_is_judged_again_not_served(references, env, tmp_path):
    """A candidate whose worker is killed on both tries is judged worker-died, committed
    like any verdict; a run that meets it again (here: the same run, resumed over a fresh
    copy of its archive) judges it afresh and the verdict replaces the row."""
    import sqlite3
    cfg, want = references["verify"]
    _run(env, "run", cfg, tmp_path / "run", die="isolation:6:again", folder=tmp_path / "die")
    conn = sqlite3.connect(tmp_path / "run" / "archive.db")
    (died,) = conn.execute("SELECT eval_key FROM evaluations WHERE status = 'worker-died'"
                           ).fetchall()
    conn.close()
    from asmevo.archive.store import Archive
    from asmevo.engine import verdict_cache
    with Archive(tmp_path / "run" / "archive.db") as a:
        ctx = a.run()["eval_context"]
        assert verdict_cache.judged(a, ctx, died[0]) is None       # not served as a verdict
        real = Evaluation(died[0], Verdict("mismatch", "judged again"))
        assert verdict_cache.put_evaluation(a, ctx, died[0], real)  # the row gives way
        assert verdict_cache.judged(a, ctx, died[0])["evaluation"].verdict.status == "mismatch"
        other = Evaluation(died[0], Verdict("equal"))
        assert not verdict_cache.put_evaluation(a, ctx, died[0], other)   # a verdict stays
