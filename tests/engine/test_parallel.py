"""Parallel evaluation gives the archive of a serial run: joblib processes and a real
two-worker Dask cluster on loopback, committed in submission order."""
from __future__ import annotations

import os

import pytest

from asmevo.engine.evaluator import Evaluator
from asmevo.engine.command import open_engine
from asmevo.engine.rundir import create_run
from tests.engine.helpers import ROOT, archive_content, assert_same_archive, config_text, write_config


def _run(tmp_path, name, **kw):
    cfg = write_config(tmp_path / f"{name}.toml", generations=4, **kw)
    with create_run(cfg, tmp_path / name) as run:
        engine = open_engine(run)
        try:
            engine.run()
        finally:
            engine.pool.close()
    return archive_content(tmp_path / name)


@pytest.fixture
def serial(tmp_path):
    return _run(tmp_path, "serial", n_jobs=1)


def test_joblib_processes_match_serial(tmp_path, serial):
    assert_same_archive(_run(tmp_path, "joblib", n_jobs=2), serial)


def test_dask_local_cluster_matches_joblib(tmp_path, serial, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        got = _run(tmp_path, "dask", scheduler=cluster.scheduler_address)
        with distributed.Client(cluster.scheduler_address) as client:
            # both workers really took part
            assert len(client.scheduler_info()["workers"]) == 2
    joblib_run = _run(tmp_path, "joblib", n_jobs=2)
    assert_same_archive(got, joblib_run)
    assert_same_archive(got, serial)


def test_gpu_work_goes_only_to_gpu_workers(tmp_path, monkeypatch):
    """With resources, an evaluation that needs a GPU runs on the worker declaring one."""
    distributed = pytest.importorskip("distributed")
    from asmevo.engine.parallel import DaskPool

    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    node = {"cls": distributed.Nanny, "options": {"nthreads": 1, "host": "127.0.0.1"}}
    gpu_node = {"cls": distributed.Nanny,
                "options": {"nthreads": 1, "host": "127.0.0.1", "resources": {"GPU": 1}}}
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": "127.0.0.1", "dashboard_address": None}}
    with distributed.SpecCluster(workers={"cpu": node, "gpu": gpu_node},
                                 scheduler=scheduler) as cluster:
        pool = DaskPool(cluster.scheduler_address, "GPU")
        try:
            pool.client.wait_for_workers(2)
            gpu_addr = next(a for a, w in pool.client.scheduler_info()["workers"].items()
                            if w.get("resources", {}).get("GPU"))
            where = list(pool.map(_worker_address, None, list(range(6)), gpu=True))
            assert set(where) == {gpu_addr}
            anywhere = list(pool.map(_worker_address, None, list(range(12)), gpu=False))
            assert len(anywhere) == 12
        finally:
            pool.close()


def _worker_address(_evaluator, _item):
    from distributed import get_worker
    return get_worker().address


class _Warmed(Evaluator):
    """An evaluator stand-in whose warm() leaves a file per worker process."""

    def __init__(self, folder):
        self.folder = str(folder)

    def warm(self, worker=True):
        open(os.path.join(self.folder, f"warm-{os.getpid()}"), "w").close()

    def build(self, edits):
        raise AssertionError("not built")

    def evaluate(self, edits):
        raise AssertionError("not evaluated")


def _warmed_here(evaluator, item):
    import time
    time.sleep(0.2)         # long enough that both workers take tasks
    return os.getpid(), os.path.exists(os.path.join(evaluator.folder, f"warm-{os.getpid()}"))


def test_joblib_workers_warm_up_as_they_start(tmp_path):
    from asmevo.engine.parallel import JoblibPool
    warm = _Warmed(tmp_path)
    pool = JoblibPool(2, warm=warm)
    try:
        got = list(pool.map(_warmed_here, warm, list(range(8))))
    finally:
        pool.close()
    assert all(ok for _, ok in got)                 # set up before each worker's first task
    assert len({pid for pid, _ in got}) == 2


class _Counting(Evaluator):
    """An evaluator stand-in that counts its evaluations; ``fail`` builds refused."""

    def __init__(self, fail=()):
        self.fail, self.evaluated = set(fail), []

    def build(self, edits):
        from asmevo.verdict import Verdict
        if edits in self.fail:
            return None, Verdict("build", "refused")
        return ("code:" + ",".join(e.lines[0] for e in edits)).encode(), None

    def evaluate(self, edits):
        self.evaluated.append(edits)
        from asmevo.verdict import Evaluation, Verdict
        return Evaluation(f"evaluation of {edits}", Verdict("mismatch", "stand-in"))


def test_judge_task_evaluates_only_what_the_parent_has_no_verdict_for():
    from asmevo.engine.parallel import judge_task
    from asmevo.engine.verdict_cache import KnownKeys, holds
    from asmevo.verify.pipeline import candidate_key

    from asmevo.edits import Edit

    def e(text):
        return (Edit("k", 0, 1, (text,)),)
    ev = _Counting(fail={e("bad")})
    known = KnownKeys.__new__(KnownKeys)
    known._set, known._blob = set(), None
    seen = candidate_key(b"code:a", e("a"))
    for k in [seen] + [f"other{i}" for i in range(200)]:
        known.add(k)
    blob = known.blob()
    assert holds(blob, seen) and all(holds(blob, f"other{i}") for i in range(200))
    assert not holds(blob, candidate_key(b"code:b", e("b"))) and not holds(b"", seen)

    key, data, verdict, got, text = judge_task(ev, (e("a"), blob))  # the archive has it
    assert (key, data, verdict, got, text) == (seen, b"code:a", None, None, None)
    assert judge_task(ev, (e("b"), blob))[3].code_sha256 == f"evaluation of {e('b')}"
    assert judge_task(ev, (e("c"), None))[3] is None               # built only
    assert judge_task(ev, (e("bad"), blob))[2].status == "build"
    assert ev.evaluated == [e("b")]


def test_a_hint_that_claims_every_candidate_changes_nothing(tmp_path, serial, monkeypatch):
    """A worker that leaves out an evaluation the parent needs (the hint is wrong: here
    it names every candidate of the serial run, though this run's archive is empty)
    only moves it to the parent's second round: the archive is the serial run's."""
    import sqlite3
    from asmevo.engine import verdict_cache

    conn = sqlite3.connect(str(tmp_path / "serial" / "archive.db"))
    keys = [r[0] for r in conn.execute("SELECT eval_key FROM evaluations")]
    conn.close()
    assert len(keys) > 5
    real = verdict_cache.KnownKeys.__init__

    def claims_all(self, archive, context_key):
        real(self, archive, context_key)
        assert not self._set                    # a fresh archive
        for k in keys:
            self.add(k)
    monkeypatch.setattr(verdict_cache.KnownKeys, "__init__", claims_all)
    assert_same_archive(_run(tmp_path, "hinted", n_jobs=1), serial)


def test_candidates_go_to_the_pool_while_the_next_are_proposed(tmp_path, serial, monkeypatch):
    """A generation's first candidate is judged before its last proposal is made (the
    workers need not wait for every proposal), and the archive is the serial run's."""
    import asmevo.engine.engine as E

    log = []
    task, propose, step = E.judge_task, E.Engine._propose, E.Engine.step

    def judging(evaluator, item):
        log.append("judge")
        return task(evaluator, item)

    def proposing(self, *a, **kw):
        for p in propose(self, *a, **kw):
            log.append("propose")
            yield p
    def stepping(self):
        log.append("generation")
        return step(self)
    monkeypatch.setattr(E, "judge_task", judging)
    monkeypatch.setattr(E.Engine, "_propose", proposing)
    monkeypatch.setattr(E.Engine, "step", stepping)
    assert_same_archive(_run(tmp_path, "streamed", n_jobs=1), serial)
    gens = "".join("gpj"["generation propose judge".split().index(e)] for e in log).split("g")
    assert gens[0] == "j" and len(gens) == 6          # K0, then generations 0-4
    assert all(g.count("p") > 1 for g in gens[1:])
    assert all("j" in g[g.index("p"):g.rindex("p")] for g in gens[1:])


def _verify_run(tmp_path, name, n_jobs):
    text = config_text(generations=2, population=3, n_jobs=n_jobs).replace(
        'evaluator = "instruction-count"', 'evaluator = "verify"\ndevice = "emulator"')
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(text)
    with create_run(cfg, tmp_path / name) as run:
        engine = open_engine(run)
        try:
            kind = type(engine.pool).__name__
            engine.run()
        finally:
            engine.pool.close()
    return kind, archive_content(tmp_path / name)


def test_verifying_on_the_emulator_forks_warm_workers_and_matches_serial(tmp_path):
    """The emulator's evaluator forks its pool from the parent that has set it up
    (no interpreter start, no second setup of K0 in each worker): the archive is the
    serial run's."""
    kind, forked = _verify_run(tmp_path, "forked", 2)
    assert kind == "ForkPool"
    assert _verify_run(tmp_path, "inline", 1) == ("InlinePool", forked)
    # each equal candidate's assembly came back from the worker that built it: the
    # text the edits give when applied to K0 anew
    import sqlite3
    from asmevo.edits import edits_from_json
    from asmevo.engine.evaluator import assembly_of
    conn = sqlite3.connect(str(tmp_path / "forked" / "archive.db"))
    rows = conn.execute("SELECT i.edits, i.code_sha256, r.spec_path FROM individuals i "
                        "JOIN evaluations e ON e.eval_key = i.eval_key JOIN runs r "
                        "WHERE e.status = 'equal' AND i.n_edits > 0").fetchall()
    conn.close()
    assert rows
    k0 = str(ROOT / "experiments" / "kernels" / "asm_copy" / "asm_copy.gfx942.co")
    for edits, sha, _ in rows:
        blob = tmp_path / "forked" / "blobs" / sha[:2] / f"{sha}.s"
        assert blob.read_text() == assembly_of(k0, edits_from_json(edits))
    from asmevo.engine.config import load_config
    from asmevo.engine.evaluator import make_evaluator
    ev = make_evaluator(load_config(tmp_path / "forked.toml"))
    from asmevo.verify import evaluate
    evaluate._BUILT.clear()             # the inline run built them here
    edits = edits_from_json(rows[-1][0])
    assert ev.built_assembly(edits) is None             # not built in this process
    ev.build(edits)
    assert ev.built_assembly(edits) == assembly_of(k0, edits)


def _k0_setups(evaluator, _item):
    from asmevo.verify.baseline import BASELINES
    return os.getpid(), BASELINES.misses


def test_fork_pool_workers_inherit_the_parents_setup(tmp_path):
    from asmevo.engine.config import load_config
    from asmevo.engine.evaluator import make_evaluator
    from asmevo.engine.parallel import ForkPool
    from asmevo.verify.baseline import BASELINES

    cfg = tmp_path / "v.toml"
    cfg.write_text(config_text(n_jobs=2).replace('evaluator = "instruction-count"',
                                                 'evaluator = "verify"'))
    ev = make_evaluator(load_config(cfg))
    assert ev.forks
    BASELINES.clear()
    misses = 0
    import gc
    frozen = gc.get_freeze_count()
    pool = ForkPool(2, ev)
    try:
        assert BASELINES.misses == misses + 1        # set up here, once
        assert gc.get_freeze_count() > frozen                  # kept out of collections
        got = list(pool.map(_warmed_and_slow, ev, list(range(6))))
    finally:
        pool.close()
    assert gc.get_freeze_count() == 0                          # and thawed with the pool
    assert len({pid for pid, _ in got}) == 2 and os.getpid() not in {pid for pid, _ in got}
    assert all(m == misses + 1 for _, m in got)                # and never again there


def _warmed_and_slow(evaluator, item):
    import time
    time.sleep(0.2)         # long enough that both workers take tasks
    return _k0_setups(evaluator, item)


def test_n_jobs_minus_one_is_every_core_this_process_may_use():
    from asmevo.engine.parallel import workers
    assert workers(-1) == len(os.sched_getaffinity(0)) and workers(3) == 3
