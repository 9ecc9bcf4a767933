"""Where evaluations run: local processes (forked, or joblib's loky) or a Dask cluster.

A pool runs a module-level task per item (``submit``: a future; ``map``: results
**in submission order**, whatever order they finish in): the engine assigns and
commits in that order, so a run's archive does not depend on which worker was
fastest. With a Dask scheduler, work that needs a GPU is only sent to workers that
declare the configured resource (``dask worker --resources GPU=1``).

A local worker killed from outside (the OOM killer, ``kill -9``) breaks its executor
and every task in flight on it. The pool then starts a new executor and sends each of
those tasks again, once: a task is a pure function of its arguments, so the result,
and the run's archive, are what they would have been. A task whose worker dies again
is judged ``worker-died`` (:func:`died`), which the engine does not keep as the
candidate's own verdict.
"""
from __future__ import annotations

import gc
import os
import sys
import threading
import weakref
from concurrent.futures import CancelledError, Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Protocol

from asmevo.engine.evaluator import Evaluator, candidate_key
from asmevo.engine.verdict_cache import WORKER_DIED, holds
from asmevo.errors import AsmevoError
from asmevo.lifetime import die_with_parent
from asmevo.verdict import Evaluation, Verdict


class ParallelError(AsmevoError):
    """A pool that cannot start (no scheduler at the address) or lost its workers."""


def build_task(evaluator: Evaluator, edits) -> tuple[str, bytes | None, Any]:
    """Worker side of phase 1: the candidate's identity (built code hash) and bytes."""
    data, verdict = evaluator.build(tuple(edits))
    return candidate_key(data, edits), data, verdict


def evaluate_task(evaluator: Evaluator, edits):
    """Worker side of phase 2: the full evaluation."""
    return evaluator.evaluate(tuple(edits))


def judge_task(evaluator: Evaluator, item) -> tuple[str, bytes | None, Any, Any, str | None]:
    """Phases 1 and 2 of one candidate in one task, so its evaluation goes on from the
    build in the process that made it: ``item`` is ``(edits, known)``, and the result
    the build's ``(key, data, verdict)`` plus the evaluation, or None where the build
    failed, where ``known`` (:meth:`asmevo.engine.verdict_cache.KnownKeys.blob`) holds
    the key, or where ``known`` is None (build only: the budget may not pay for it);
    last, an equal candidate's assembly text as built here, where the evaluator has
    it at hand (``built_assembly``), else None."""
    edits, known = item
    key, data, verdict = build_task(evaluator, edits)
    if verdict is not None or known is None or holds(known, key):
        return key, data, verdict, None, None
    ev = evaluator.evaluate(tuple(edits))
    return key, data, verdict, ev, evaluator.built_assembly(edits) if ev.verdict.equal else None


def died(fn: Callable, item, reason: str):
    """The result of task ``fn`` on ``item`` whose worker was killed on both tries: a
    ``worker-died`` verdict under the candidate's edit key (its code was not built
    here; the engine files an evaluation under the key it knows)."""
    verdict = Verdict(WORKER_DIED, reason)
    if fn is judge_task:
        return candidate_key(None, item[0]), None, verdict, None, None
    if fn is build_task:
        return candidate_key(None, item), None, verdict
    if fn is evaluate_task:
        return Evaluation(candidate_key(None, item), verdict)
    raise ParallelError(reason)


class Pool(Protocol):
    def submit(self, fn: Callable, evaluator: Evaluator, item, *, gpu: bool = False): ...
    def map(self, fn: Callable, evaluator: Evaluator, items: list, *,
            gpu: bool = False) -> Iterator: ...
    def close(self) -> None: ...


def in_order(futures: list) -> Iterator:
    """The futures' results in submission order; the rest are cancelled when the
    consumer stops early or one of them raises."""
    try:
        for f in futures:
            yield f.result()
    finally:
        for f in futures:
            f.cancel()


class InlinePool:
    """Everything in this process, one after another (``n_jobs = 1``): a task runs
    when it is submitted."""

    def submit(self, fn, evaluator, item, *, gpu=False):
        from concurrent.futures import Future
        f = Future()
        try:
            f.set_result(fn(evaluator, item))
        except Exception as exc:   # noqa: BLE001 - raised where the result is asked for
            f.set_exception(exc)
        return f

    def map(self, fn, evaluator, items, *, gpu=False):
        for item in items:
            yield fn(evaluator, item)

    def close(self) -> None:
        pass


def _start_worker(parent: int, evaluator: Evaluator | None) -> None:
    """A pool worker's start: die with ``parent``; set up the evaluator's per-process
    state (``evaluator.warm()``, where it has one) before the first task. What it holds
    then lasts as long as it does: ``gc.freeze`` keeps it out of later collections
    (a forked worker's inherited objects: no walk over them, no write to shared pages)."""
    die_with_parent(parent)
    if evaluator is not None:
        evaluator.warm()
    gc.freeze()


def _started() -> None:
    """A task that does nothing: sent at once, so the workers start (and warm up)
    while the parent is still setting up."""


class _Task:
    """A task on a local executor, sent to a fresh one once if its worker dies."""

    def __init__(self, pool: "_Executor", fn: Callable, evaluator: Evaluator, item):
        self.pool, self.call, self.retried = pool, (fn, evaluator, item), False
        self.sent, self.future = pool.send(*self.call)
        pool.tasks.add(self)

    def lost(self) -> bool:
        """Whether its future failed with its executor (and so is to be sent again)."""
        f = self.future
        return f.done() and (f.cancelled() or isinstance(f.exception(), BrokenProcessPool))

    def resend(self) -> None:
        """Sent again, to the pool's current executor (called holding the pool's lock)."""
        self.retried = True
        self.sent = self.pool.executor
        try:
            self.future = self.sent.submit(*self.call)
        except BrokenProcessPool as exc:        # broke again at once: judged below
            self.future = Future()
            self.future.set_exception(exc)

    def result(self):
        while True:
            sent, future = self.sent, self.future
            try:
                return future.result()
            except (BrokenProcessPool, CancelledError) as exc:
                if isinstance(exc, CancelledError) and sent is self.pool.executor:
                    raise                      # cancelled, not lost with a dead executor
                if self.retried and self.sent is sent:
                    fn, _, item = self.call
                    why = (str(exc).strip().splitlines() or ["the pool broke"])[0][:300]
                    return died(fn, item, f"its worker process died twice ({why})")
                self.pool.recover(sent, self)

    def cancel(self) -> bool:
        return self.future.cancel()


def _shut(executor) -> None:
    """Shut a broken executor down without waiting (loky's takes other arguments)."""
    try:
        executor.shutdown(wait=False, cancel_futures=True)
    except TypeError:
        executor.shutdown(wait=False, kill_workers=True)


class _Executor:
    """A pool over a ``concurrent.futures`` executor of local processes (``start()``
    makes one), replaced when a worker dies (see the module docstring)."""

    executor: Any
    renewed = 0                 # executors replaced so far (tests, reports)

    def _begin(self) -> None:
        self._lock = threading.Lock()
        self.tasks: weakref.WeakSet = weakref.WeakSet()
        self.executor = self.start()

    def start(self):
        raise NotImplementedError

    def send(self, fn, evaluator, item) -> tuple[Any, Any]:
        """``(executor, future)`` of ``fn(evaluator, item)``, on a fresh executor where the
        current one is broken already."""
        for _ in range(2):
            ex = self.executor
            try:
                return ex, ex.submit(fn, evaluator, item)
            except BrokenProcessPool:
                self.recover(ex)
        raise ParallelError("the pool of workers broke again as it was replaced")

    def recover(self, broken, task: _Task | None = None) -> None:
        """Replace ``broken`` by a fresh executor (once, however many of its tasks report
        it) and send every task lost with it there at once; ``task`` too, if it is one."""
        with self._lock:
            if self.executor is broken:
                _shut(broken)
                self.executor = self.start()
                self.renewed += 1
                for t in list(self.tasks):
                    if t.sent is broken and not t.retried and t is not task and t.lost():
                        t.resend()
            if task is not None and task.sent is broken:
                task.resend()

    def submit(self, fn, evaluator, item, *, gpu=False):
        return _Task(self, fn, evaluator, item)

    def map(self, fn, evaluator, items, *, gpu=False):
        return in_order([self.submit(fn, evaluator, item) for item in items])

    def close(self) -> None:
        self.executor.shutdown(wait=True)


class JoblibPool(_Executor):
    """Local worker processes (joblib's loky executor), kept alive for the whole run.

    Each worker dies with this process (:func:`asmevo.lifetime.die_with_parent`), so
    a ``kill -9`` of the run leaves none behind. With ``warm`` (the evaluator), the
    workers start at once and each sets up the evaluator's state as it starts (K0's
    reference runs, ...): side by side, while the parent is still starting. Tasks are
    futures (``submit``), so the engine can hand a candidate over while it is still
    proposing the next one.
    """

    def __init__(self, n_jobs: int, warm: Evaluator | None = None):
        self._n, self._warm = n_jobs, warm
        self._begin()

    def start(self):
        from joblib.externals.loky.process_executor import ProcessPoolExecutor
        ex = ProcessPoolExecutor(max_workers=self._n, initializer=_start_worker,
                                 initargs=(os.getpid(), self._warm))
        if self._warm is not None:
            ex.submit(_started)
        return ex


class ForkPool(_Executor):
    """Local worker processes forked from this one after it has set up the evaluator
    once (``warm(worker=False)``: K0's recovery and reference runs, its modeled
    time), so each worker starts with that state and no interpreter start or imports
    of its own; each then forks its own evaluating child as it starts. Only for an
    evaluator that says it ``forks`` (the emulator: a GPU context would not survive
    the fork). The pool is made before this process starts any thread; a replacement
    (a worker was killed) is forked from the state the search has then."""

    def __init__(self, n_jobs: int, warm: Evaluator):
        warm.warm(worker=False)
        # K0's state stays while the pool does: no collection walks it, here or in the
        # workers; thawed when the pool closes (a process that makes one pool after another,
        # an ablation, would otherwise keep every earlier cell's objects)
        gc.freeze()
        self._n, self._warm = n_jobs, warm
        self._begin()

    def start(self):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        ex = ProcessPoolExecutor(max_workers=self._n, mp_context=mp.get_context("fork"),
                                 initializer=_start_worker, initargs=(os.getpid(), self._warm))
        for _ in range(self._n):        # every worker forked now, from this thread
            ex.submit(_started)
        return ex

    def close(self) -> None:
        super().close()
        gc.unfreeze()


class DaskPool:
    """A Dask distributed cluster at ``address`` (the worker side:
    :mod:`asmevo.engine.cluster`).

    The run's evaluator goes to the workers once, with the files it reads
    (:mod:`asmevo.engine.shipping`), as a worker plugin the scheduler also gives every
    worker that joins later; each task then carries its function, the plugin's name
    and its item. Given ``evaluator`` (the run's), the start waits for the workers
    there to set up, and one that cannot (no LLVM, no isolation child) is one error
    naming it and what it lacks. A task whose worker dies runs again elsewhere, once
    (the scheduler re-sends it; :func:`asmevo.engine.cluster.run` counts), then it is
    judged ``worker-died`` (:func:`died`); while no worker can evaluate, the search
    waits for one, and says so in one line (:class:`_Watch`).
    """

    def __init__(self, address: str, gpu_resource: str = "GPU", *, evaluator=None,
                 timeout: float = 30.0):
        try:
            from distributed import Client

            from asmevo.engine import cluster
        except ImportError as exc:
            raise ParallelError("parallel.scheduler needs dask.distributed "
                                "(pip install 'asmevo[distributed]')") from exc
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ParallelError(f"no Dask scheduler at {address} ({exc})") from exc
        self.address, self.gpu_resource, self._cluster = address, gpu_resource, cluster
        self._setups: dict[int, str] = {}
        try:
            self._check_scheduler()
            if evaluator is not None:
                self._setup(evaluator)
            self.client.subscribe_topic(cluster.TOPIC, _said)
        except BaseException:
            self.client.close()
            raise
        self._watch = _Watch(self)

    def _check_scheduler(self) -> None:
        """The scheduler unpickles every task it is sent (Dask >= 2023.4), the run's
        functions with them: it needs the run's asmevo as the workers do."""
        from asmevo.engine.shipping import fingerprint
        try:
            theirs = self.client.run_on_scheduler(fingerprint)
        except Exception as exc:        # noqa: BLE001 - whatever it cannot do, it says
            raise ParallelError(f"the Dask scheduler at {self.address} cannot run asmevo's "
                                f"code ({self._cluster.one_line(exc)}); it unpickles the "
                                "run's tasks: install the run's asmevo beside it") from None
        if theirs != fingerprint():
            raise ParallelError(f"the Dask scheduler at {self.address} has another asmevo "
                                f"({theirs}) than the run ({fingerprint()}); it unpickles "
                                "the run's tasks: install the run's version beside it")

    def _setup(self, evaluator) -> str | None:
        """The plugin that sets ``evaluator`` up on every worker, registered the first
        time; None for none, or one that names no files (it travels with each task)."""
        key = id(evaluator)
        if key not in self._setups:
            if evaluator is None or not evaluator.inputs():
                return None
            from asmevo.engine.shipping import pack
            bundle = pack(evaluator)
            name = f"asmevo-{evaluator.context_key}-{bundle.sha256[:12]}"
            try:
                self.client.register_plugin(self._cluster.Setup(name, bundle), name=name)
            except self._cluster.WorkerSetupError as exc:
                raise ParallelError(str(exc)) from None
            except Exception as exc:    # noqa: BLE001 - a refusal of the scheduler's
                raise ParallelError(f"cannot set the Dask workers at {self.address} up "
                                    f"({self._cluster.one_line(exc)})") from None
            self._setups[key] = name
        return self._setups[key]

    def ready(self) -> int:
        """Workers set up for this run's tasks (any worker, before anything was shipped)."""
        if not self._setups:
            return len(self.client.nthreads())
        return self.client.run_on_scheduler(self._cluster.ready_workers,
                                            tuple(self._setups.values()))

    def submit(self, fn, evaluator, item, *, gpu=False):
        resources = {self.gpu_resource: 1} if gpu else {}
        name = self._setup(evaluator)
        if name is None:
            future = self.client.submit(fn, evaluator, item, pure=False,
                                        resources=resources or None)
        else:
            future = self.client.submit(self._cluster.run, fn, name, item, pure=False,
                                        resources=resources | {name: 1})
        return _DaskTask(self, future, fn, item)

    def map(self, fn, evaluator, items, *, gpu=False):
        return in_order([self.submit(fn, evaluator, item, gpu=gpu) for item in items])

    def close(self) -> None:
        self._watch.stop()
        try:
            for name in self._setups.values():
                self.client.unregister_worker_plugin(name)
        except Exception:       # noqa: BLE001 - a scheduler gone already forgets them itself
            pass
        self.client.close()


def _said(event) -> None:
    """An event a worker sent on :data:`asmevo.engine.cluster.TOPIC`: its one line."""
    _, msg = event
    print(f"{msg.get('error', msg)}; it gets no task of this run", file=sys.stderr, flush=True)


class _DaskTask:
    """A task on the cluster; its result, or ``worker-died`` where its workers died
    more often than it is run again."""

    def __init__(self, pool: DaskPool, future, fn: Callable, item):
        self.pool, self.future, self.fn, self.item = pool, future, fn, item
        self.cancelled = False

    def result(self):
        from distributed import KilledWorker
        try:
            got = self.future.result()
        except KilledWorker as exc:     # the scheduler's own limit, where it is lower
            return died(self.fn, self.item, f"its Dask workers died ({exc})")
        except CancelledError:
            if self.cancelled:
                raise
            raise ParallelError(f"lost the Dask scheduler at {self.pool.address}; "
                                "`asmevo resume RUN_DIR` goes on from the last committed "
                                "generation") from None
        if self.pool._watch.waiting:    # a worker is back, whether the watch saw it yet
            try:
                self.pool._watch.look()
            except Exception:           # noqa: BLE001 - the watch's own look says it later
                pass
        if isinstance(got, self.pool._cluster.Lost):
            return died(self.fn, self.item, f"its Dask worker died {got.deaths} times")
        return got

    def cancel(self) -> bool:
        self.cancelled = True
        return self.future.cancel()


class _Watch:
    """Says, in one line each, when no worker of the cluster can evaluate (the search
    waits: tasks stay with the scheduler until a worker joins and sets up) and when
    one can again: looked at every ``interval`` seconds, and as a result comes in
    while it waits (a search may finish before the next look)."""

    def __init__(self, pool: DaskPool, interval: float = 2.0):
        self._pool, self._interval = pool, interval
        self._lock = threading.Lock()
        self.waiting = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="asmevo-dask-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.look()
            except Exception:           # noqa: BLE001 - the scheduler is gone: tasks say so
                return

    def look(self) -> None:
        with self._lock:
            n = self._pool.ready()
            if n == 0 and not self.waiting:
                print(f"no Dask worker at {self._pool.address} can evaluate: the search "
                      "waits for one to join (Ctrl-C stops it; `asmevo resume` goes on)",
                      file=sys.stderr, flush=True)
            elif n and self.waiting:
                print(f"{n} Dask worker{'s' if n > 1 else ''} ready: the search goes on",
                      file=sys.stderr, flush=True)
            self.waiting = n == 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def make_pool(parallel, warm: Evaluator | None = None) -> Pool:
    """The pool a ``[parallel]`` config names; ``warm``: the evaluator its local workers
    set up as they start (see :class:`JoblibPool`)."""
    if parallel.scheduler:
        return DaskPool(parallel.scheduler, parallel.gpu_resource, evaluator=warm)
    n = workers(parallel.n_jobs)
    if n == 1:
        return InlinePool()
    if warm is not None and warm.forks:
        return ForkPool(n, warm)
    return JoblibPool(n, warm)


def workers(n_jobs: int) -> int:
    """Local worker processes for ``parallel.n_jobs`` (-1: every core this process may
    run on)."""
    return n_jobs if n_jobs > 0 else max(1, len(os.sched_getaffinity(0)))
