"""A search on a Dask deployment started as a user starts one: ``dask scheduler`` and
``dask worker`` processes from the command line on 127.0.0.1 (a nanny per worker,
whose worker processes are daemonic: the default), the run in a process of its own.

The quick start's archive on such a cluster equals the serial run's: with one worker
process killed mid-run, and with workers that see neither the run directory nor the
checkout's ``experiments`` folder. A worker without LLVM stops the run at its start
with one line; a cluster that loses every worker waits for one and goes on.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asmevo.engine.command import search
from asmevo.engine.rundir import create_run
from tests.engine.helpers import ROOT, archive_content, assert_same_archive, write_config

distributed = pytest.importorskip("distributed")

QUICKSTART = ROOT / "experiments" / "quickstart.toml"
PAUSED = "can evaluate: the search waits for one to join"
GOES_ON = "ready: the search goes on"


def _quickstart(path: Path, scheduler: str = "") -> Path:
    """experiments/quickstart.toml with its spec's absolute path; on ``scheduler``, or
    serial without one."""
    text = QUICKSTART.read_text()
    spec = 'spec = "kernels/matmul_tiled"'
    assert spec in text and "\nn_jobs = 2\n" in text
    text = text.replace(spec, f'spec = "{ROOT / "experiments" / "kernels" / "matmul_tiled"}"')
    text = text.replace("\nn_jobs = 2\n", f'\nn_jobs = 2\nscheduler = "{scheduler}"\n'
                        if scheduler else "\nn_jobs = 1\n")
    path.write_text(text)
    return path


def _run_here(config: Path, run_dir: Path) -> dict:
    with create_run(config, run_dir) as run:
        search(run)
    return archive_content(run_dir)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The quick start, serial, in this process: the archive every cluster run matches."""
    d = tmp_path_factory.mktemp("serial")
    return _run_here(_quickstart(d / "serial.toml"), d / "run")


@pytest.fixture
def env():
    e = os.environ | {"PYTHONPATH": str(ROOT)}
    e.pop("DASK_DISTRIBUTED__WORKER__DAEMON", None)        # the default: daemonic
    return e


class _Processes:
    """Processes a test starts, each in a session of its own; killed (the whole session)
    when the test ends."""

    def __init__(self, folder: Path):
        self.folder, self.started = folder, []

    def start(self, argv: list[str], env: dict, name: str, cwd: Path = ROOT,
              **kw) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=kw.pop("stdout", log),
                             stderr=log, start_new_session=True, **kw)
        self.started.append((p, log))
        return p

    def stop(self, p: subprocess.Popen) -> None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(30)

    def close(self) -> None:
        for p, log in self.started:
            self.stop(p)
            log.close()


@pytest.fixture
def procs(tmp_path_factory):
    p = _Processes(tmp_path_factory.mktemp("logs"))
    yield p
    p.close()


def _scheduler(procs: _Processes, env: dict) -> str:
    """A ``dask scheduler`` on 127.0.0.1 (any free port), in a folder of its own; its
    address."""
    f = procs.folder / "scheduler.json"
    procs.start([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1",
                 "--port", "0", "--no-dashboard", "--scheduler-file", str(f)], env,
                "scheduler", cwd=procs.folder)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            return json.loads(f.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    raise AssertionError("the scheduler did not start: " + (procs.folder / "scheduler.log")
                         .read_text()[-2000:])


def _worker_argv(address: str, folder: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
            "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(folder),
            *options]


def _client(address: str):
    return distributed.Client(address, set_as_default=False, timeout=30)


def _search(procs: _Processes, env: dict, config: Path, run_dir: Path) -> subprocess.Popen:
    """``asmevo run`` in a process of its own; progress lines on its stdout."""
    return procs.start([sys.executable, "-m", "asmevo", "run", str(config), "--run-dir",
                        str(run_dir)], env, "run", stdout=subprocess.PIPE, text=True)


def _finished(procs: _Processes, run: subprocess.Popen) -> str:
    """The run's stderr once it has ended well (exit 0, no traceback)."""
    assert run.wait(300) == 0, (procs.folder / "run.log").read_text()[-3000:]
    err = (procs.folder / "run.log").read_text()
    assert "Traceback" not in err, err[-3000:]
    return err


@pytest.mark.slow
@pytest.mark.timeout(600, method="thread")
def test_cli_workers_with_one_killed_mid_run_give_the_serial_archive(serial, procs, env,
                                                                      tmp_path):
    """Two nanny workers; when the first generation has committed, the worker process
    that is running one of the run's tasks is killed (SIGKILL): its nanny starts another,
    the task runs again elsewhere, and the archive is the serial run's."""
    address = _scheduler(procs, env)
    procs.start(_worker_argv(address, tmp_path, "--nworkers", "2"), env, "workers")
    with _client(address) as client:
        client.wait_for_workers(2, timeout=120)
        run = _search(procs, env, _quickstart(tmp_path / "c.toml", address), tmp_path / "run")
        killed = None
        for line in run.stdout:
            if killed is None and line.startswith("gen 1/"):
                killed = _kill_a_busy_worker(client)
        err = _finished(procs, run)
        retried = client.run_on_scheduler(_suspicious_runs)
    assert killed is not None, "no worker was running a task of the run"
    assert retried >= 1, "no task was lost with the killed worker"
    assert_same_archive(archive_content(tmp_path / "run"), serial)
    assert PAUSED not in err
    # the report counts each worker's evaluations: the killed one, its replacement and
    # the other, together every fresh evaluation of the run
    from asmevo.archive.store import Archive
    from asmevo.engine.report import build_report
    with Archive(tmp_path / "run" / "archive.db", readonly=True) as a:
        table = build_report(a, None).tables["evaluations per Dask worker"]
        fresh = a.conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
    assert len(table) >= 2, table
    assert table["evaluations"].sum() == fresh and (table["seconds"] > 0).all()


def test_a_worker_with_other_asmevo_sources_is_refused(tmp_path):
    """The worker's asmevo must be the run's (the same files): another version could
    judge a candidate otherwise."""
    from asmevo.engine.cluster import Setup, WorkerSetupError
    from asmevo.engine.evaluator import InstructionCountEvaluator
    from asmevo.engine.shipping import fingerprint, pack
    ev = InstructionCountEvaluator.create(ROOT / "experiments/kernels/asm_copy/"
                                          "asm_copy.gfx942.co", "asm_copy")
    setup = Setup("asmevo-test", pack(ev))
    assert setup.asmevo == fingerprint()
    setup.asmevo = "0" * 16
    with pytest.raises(WorkerSetupError, match="is not the run's"):
        setup._ready(str(tmp_path))
    setup.asmevo = fingerprint()
    here = setup._ready(str(tmp_path))
    assert here.k0_path.startswith(str(tmp_path)) and here.build(())[1] is None


def _kill_a_busy_worker(client, wait: float = 30.0) -> str | None:
    """SIGKILL the process of a worker the scheduler has a task of the run on."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        busy = [a for a, keys in client.processing().items()
                if any(str(k).startswith("run-") for k in keys)]
        if busy:
            (pid,) = client.run(os.getpid, workers=busy[:1]).values()
            os.kill(pid, signal.SIGKILL)
            return busy[0]
        time.sleep(0.02)
    return None


def _suspicious_runs(dask_scheduler=None) -> int:
    """How often a task of the run was on a worker that died (the scheduler's count)."""
    prefix = dask_scheduler.task_prefixes.get("run")
    return prefix.suspicious if prefix is not None else 0


def _hiding(folders: list[Path]) -> tuple[list[str] | None, str]:
    """A command prefix that runs its command in a user and mount namespace of its own
    (``unshare``: no change to this machine's mounts) where each of ``folders`` is an
    empty tmpfs; None and the reason where that cannot be done here."""
    if not shutil.which("unshare"):
        return None, "no unshare (util-linux)"
    script = "".join(f'mount -t tmpfs -o size=1m asmevo-hidden "${{H{i}}}" && '
                     f'test -z "$(ls -A "${{H{i}}}")" && ' for i in range(len(folders)))
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
              "sh", "-c", script + 'exec "$@"', "sh"]
    try:
        probe = subprocess.run(prefix + ["true"], env=_hidden_env(os.environ, folders),
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"unshare does not run here ({exc})"
    if probe.returncode != 0:
        return None, f"cannot hide folders in a mount namespace here ({probe.stderr.strip()[:160]})"
    return prefix, ""


def _hidden_env(env, folders: list[Path]) -> dict:
    return dict(env) | {f"H{i}": str(f) for i, f in enumerate(folders)}


@pytest.mark.slow
@pytest.mark.timeout(600, method="thread")
def test_workers_that_cannot_see_the_run_or_the_experiments(serial, procs, env, tmp_path,
                                                            tmp_path_factory):
    """The workers run in a folder of their own, in a mount namespace where the run
    directory (this test's folder: config and archive) and the checkout's experiments
    folder (K0, the spec, its reference) are empty: everything they need travels to
    them, and the archive is still the serial run's."""
    hidden = [tmp_path, ROOT / "experiments"]
    prefix, why = _hiding(hidden)
    if prefix is None:
        pytest.skip(why)
    address = _scheduler(procs, env)
    home = tmp_path_factory.mktemp("worker-home")
    worker_env = _hidden_env(env, hidden) | {"ASMEVO_CACHE_DIR": str(home / "cache")}
    procs.start(prefix + _worker_argv(address, home, "--nworkers", "2"), worker_env,
                "workers", cwd=home)
    with _client(address) as client:
        client.wait_for_workers(2, timeout=120)
        run = _search(procs, env, _quickstart(tmp_path / "c.toml", address), tmp_path / "run")
        for _ in run.stdout:
            pass
        _finished(procs, run)
    assert_same_archive(archive_content(tmp_path / "run"), serial)


@pytest.mark.timeout(300, method="thread")
def test_a_worker_without_llvm_stops_the_run_at_its_start(procs, env, tmp_path):
    """One line naming the worker and the tools it lacks, exit 2, no traceback."""
    address = _scheduler(procs, env)
    empty = tmp_path / "no-llvm"
    empty.mkdir()
    procs.start(_worker_argv(address, tmp_path), env | {"ASMEVO_LLVM_DIR": str(empty)},
                "worker")
    with _client(address) as client:
        client.wait_for_workers(1, timeout=120)
        (worker,) = client.scheduler_info(n_workers=-1)["workers"]
    run = subprocess.run([sys.executable, "-m", "asmevo", "run",
                          str(_quickstart(tmp_path / "c.toml", address)), "--run-dir",
                          str(tmp_path / "run")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert f"Dask worker {worker}:" in line and "llvm-mc" in line and "ld.lld" in line, line


@pytest.mark.timeout(300, method="thread")
def test_a_scheduler_without_asmevo_stops_the_run_at_its_start(procs, env, tmp_path):
    """The scheduler unpickles the run's tasks: one that cannot import asmevo is one line
    at the start (not a traceback at the first task)."""
    blocked = tmp_path / "no_asmevo"         # as if asmevo were not installed there
    blocked.mkdir()
    (blocked / "sitecustomize.py").write_text("import sys\nsys.modules['asmevo'] = None\n")
    address = _scheduler(procs, env | {"PYTHONPATH": str(blocked)})
    run = subprocess.run([sys.executable, "-m", "asmevo", "run",
                          str(write_config(tmp_path / "c.toml", scheduler=address)),
                          "--run-dir", str(tmp_path / "run")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert f"the Dask scheduler at {address} cannot run asmevo's code" in line, line
    assert "ModuleNotFoundError" in line and "asmevo" in line, line


@pytest.mark.timeout(300, method="thread")
def test_a_cluster_that_loses_every_worker_waits_for_one(procs, env, tmp_path):
    """One worker without a nanny (its process is not daemonic), killed after the first
    generation: the search says once that it waits; a worker started then takes the
    work up, the search says so once, and the archive is a serial run's."""
    address = _scheduler(procs, env)
    config = write_config(tmp_path / "c.toml", generations=6, scheduler=address)
    want = _run_here(write_config(tmp_path / "serial.toml", generations=6),
                     tmp_path / "serial")
    first = procs.start(_worker_argv(address, tmp_path, "--no-nanny"), env, "first")
    with _client(address) as client:
        client.wait_for_workers(1, timeout=120)
    run = _search(procs, env, config, tmp_path / "run")
    for line in run.stdout:
        if line.startswith("gen 1/") and first.poll() is None:
            procs.stop(first)
            _wait_for(lambda: PAUSED in (procs.folder / "run.log").read_text(), 60)
            procs.start(_worker_argv(address, tmp_path, "--no-nanny"), env, "second")
    err = _finished(procs, run)
    assert first.poll() is not None, "the run ended before the worker was killed"
    assert err.count(PAUSED) == 1 and err.count(GOES_ON) == 1, err
    assert_same_archive(archive_content(tmp_path / "run"), want)


def _wait_for(ok, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.timeout(300, method="thread")
def test_a_task_whose_workers_die_twice_is_judged_worker_died(tmp_path, monkeypatch):
    """As in a local pool, a task lost with its worker runs again once: killed twice, it
    is judged worker-died (not run a third time), and the cluster works on."""
    from asmevo.edits import Edit
    from asmevo.engine.evaluator import InstructionCountEvaluator
    from asmevo.engine.parallel import DaskPool, evaluate_task
    from tests.engine.dying import DyingEvaluator

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    base = InstructionCountEvaluator.create(ROOT / "experiments/kernels/asm_copy/"
                                            "asm_copy.gfx942.co", "asm_copy")
    ev = DyingEvaluator(base, str(tmp_path / "die"), nth=1, again=True)
    edits = [tuple(Edit("asm_copy", k, k + 1, ("s_nop 0",)) for k in range(n)) for n in (3, 2)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        pool = DaskPool(cluster.scheduler_address, evaluator=ev)
        try:
            dead = next(iter(pool.map(evaluate_task, ev, edits[:1])))
            calls = (tmp_path / "die" / "calls").read_bytes()
            ok = next(iter(pool.map(evaluate_task, ev, edits[1:])))
        finally:
            pool.close()
    assert dead.verdict.status == "worker-died", dead.verdict
    assert "died 2 times" in dead.verdict.reason and dead.worker is None
    assert calls == b"."            # counted once, died twice, not run a third time
    assert ok.verdict == base.evaluate(edits[1]).verdict and ok.worker.startswith("tcp://")
