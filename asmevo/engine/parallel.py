"""Where evaluations run: local processes (forked, or joblib's loky) or a Dask cluster.

A pool runs a module-level task per item (``submit``: a future; ``map``: results
**in submission order**, whatever order they finish in): the engine assigns and
commits in that order, so a run's archive does not depend on which worker was
fastest. With a Dask scheduler, work that needs a GPU is only sent to workers that
declare the configured resource (``dask worker --resources GPU=1``).
"""
from __future__ import annotations

import gc
import os
from typing import Any, Callable, Iterator, Protocol

from asmevo.engine.evaluator import Evaluator, candidate_key
from asmevo.errors import AsmevoError
from asmevo.lifetime import die_with_parent


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
    from asmevo.engine.verdict_cache import holds
    edits, known = item
    key, data, verdict = build_task(evaluator, edits)
    if verdict is not None or known is None or holds(known, key):
        return key, data, verdict, None, None
    ev = evaluator.evaluate(tuple(edits))
    text = getattr(evaluator, "built_assembly", None)
    return key, data, verdict, ev, text(edits) if text and ev.verdict.equal else None


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
    warm = getattr(evaluator, "warm", None)
    if warm is not None:
        warm()
    gc.freeze()


def _started() -> None:
    """A task that does nothing: sent at once, so the workers start (and warm up)
    while the parent is still setting up."""


class _Executor:
    """A pool over a ``concurrent.futures`` executor ``self._ex`` of local processes."""

    _ex: Any

    def submit(self, fn, evaluator, item, *, gpu=False):
        return self._ex.submit(fn, evaluator, item)

    def map(self, fn, evaluator, items, *, gpu=False):
        return in_order([self.submit(fn, evaluator, item) for item in items])

    def close(self) -> None:
        self._ex.shutdown(wait=True)


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
        from joblib.externals.loky.process_executor import ProcessPoolExecutor
        self._ex = ProcessPoolExecutor(max_workers=n_jobs, initializer=_start_worker,
                                       initargs=(os.getpid(), warm))
        if warm is not None:
            self._ex.submit(_started)


class ForkPool(_Executor):
    """Local worker processes forked from this one after it has set up the evaluator
    once (``warm(worker=False)``: K0's recovery and reference runs, its modeled
    time), so each worker starts with that state and no interpreter start or imports
    of its own; each then forks its own evaluating child as it starts. Only for an
    evaluator that says it ``forks`` (the emulator: a GPU context would not survive
    the fork). The pool is made before this process starts any thread."""

    def __init__(self, n_jobs: int, warm: Evaluator):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        warm.warm(worker=False)
        # K0's state stays while the pool does: no collection walks it, here or in the
        # workers; thawed when the pool closes (a process that makes one pool after another,
        # an ablation, would otherwise keep every earlier cell's objects)
        gc.freeze()
        self._ex = ProcessPoolExecutor(max_workers=n_jobs, mp_context=mp.get_context("fork"),
                                       initializer=_start_worker, initargs=(os.getpid(), warm))
        for _ in range(n_jobs):         # every worker forked now, from this thread
            self._ex.submit(_started)

    def close(self) -> None:
        super().close()
        gc.unfreeze()


class DaskPool:
    """A Dask distributed cluster at ``address``; the evaluator is broadcast once."""

    def __init__(self, address: str, gpu_resource: str = "GPU", *, timeout: float = 30.0):
        try:
            from distributed import Client
        except ImportError as exc:
            raise ParallelError("parallel.scheduler needs dask.distributed "
                                "(pip install 'asmevo[distributed]')") from exc
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ParallelError(f"no Dask scheduler at {address} ({exc})") from exc
        self.gpu_resource = gpu_resource
        self._scattered: dict[int, Any] = {}

    def _remote(self, evaluator):
        key = id(evaluator)
        if key not in self._scattered:
            self._scattered = {key: self.client.scatter(evaluator, broadcast=True, hash=False)}
        return self._scattered[key]

    def submit(self, fn, evaluator, item, *, gpu=False):
        resources = {self.gpu_resource: 1} if gpu else None
        return self.client.submit(fn, self._remote(evaluator), item, pure=False,
                                  resources=resources)

    def map(self, fn, evaluator, items, *, gpu=False):
        return in_order([self.submit(fn, evaluator, item, gpu=gpu) for item in items])

    def close(self) -> None:
        self.client.close()


def make_pool(parallel, warm: Evaluator | None = None) -> Pool:
    """The pool a ``[parallel]`` config names; ``warm``: the evaluator its local workers
    set up as they start (see :class:`JoblibPool`)."""
    if parallel.scheduler:
        return DaskPool(parallel.scheduler, parallel.gpu_resource)
    n = workers(parallel.n_jobs)
    if n == 1:
        return InlinePool()
    if warm is not None and getattr(warm, "forks", False):
        return ForkPool(n, warm)
    return JoblibPool(n, warm)


def workers(n_jobs: int) -> int:
    """Local worker processes for ``parallel.n_jobs`` (-1: every core this process may
    run on)."""
    return n_jobs if n_jobs > 0 else max(1, len(os.sched_getaffinity(0)))
