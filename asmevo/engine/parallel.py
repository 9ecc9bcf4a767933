"""Where evaluations run: local processes (joblib) or a Dask distributed cluster.

A pool maps a module-level task over items and yields results **in submission
order**, whatever order they finish in: the engine assigns and commits in that
order, so a run's archive does not depend on which worker was fastest. With a
Dask scheduler, work that needs a GPU is only sent to workers that declare the
configured resource (``dask worker --resources GPU=1``).
"""
from __future__ import annotations

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


def judge_task(evaluator: Evaluator, item) -> tuple[str, bytes | None, Any, Any]:
    """Phases 1 and 2 of one candidate in one task, so its evaluation goes on from the
    build in the process that made it: ``item`` is ``(edits, known)``, and the result
    the build's ``(key, data, verdict)`` plus the evaluation, or None where the build
    failed, where ``known`` (:meth:`asmevo.engine.verdict_cache.KnownKeys.blob`) holds
    the key, or where ``known`` is None (build only: the budget may not pay for it)."""
    from asmevo.engine.verdict_cache import holds
    edits, known = item
    key, data, verdict = build_task(evaluator, edits)
    if verdict is not None or known is None or holds(known, key):
        return key, data, verdict, None
    return key, data, verdict, evaluator.evaluate(tuple(edits))


class Pool(Protocol):
    def map(self, fn: Callable, evaluator: Evaluator, items: list, *,
            gpu: bool = False) -> Iterator: ...
    def close(self) -> None: ...


class InlinePool:
    """Everything in this process, one after another (``n_jobs = 1``)."""

    def map(self, fn, evaluator, items, *, gpu=False):
        for item in items:
            yield fn(evaluator, item)

    def close(self) -> None:
        pass


def _start_worker(parent: int, evaluator: Evaluator | None) -> None:
    """A pool worker's start: die with ``parent``; set up the evaluator's per-process
    state (``evaluator.warm()``, where it has one) before the first task."""
    die_with_parent(parent)
    warm = getattr(evaluator, "warm", None)
    if warm is not None:
        warm()


def _started() -> None:
    """A task that does nothing: sent at once, so the workers start (and warm up)
    while the parent is still setting up."""


class JoblibPool:
    """Local worker processes (loky), kept alive between generations.

    Each worker dies with this process (:func:`asmevo.lifetime.die_with_parent`):
    loky's own workers would idle for minutes after a ``kill -9`` of the run, and
    keep loky's resource tracker alive with them. With ``warm`` (the evaluator), the
    workers start at once and each sets up the evaluator's state as it starts
    (K0's reference runs, ...): side by side, while the parent is still starting.
    """

    def __init__(self, n_jobs: int, warm: Evaluator | None = None):
        from joblib import Parallel, delayed
        self._parallel = Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1,
                                  initializer=_start_worker, initargs=(os.getpid(), warm))
        self._parallel.__enter__()
        self._starting = self._parallel(delayed(_started)() for _ in range(1)) \
            if warm is not None else None

    def _await_start(self) -> None:
        if self._starting is not None:
            starting, self._starting = self._starting, None
            for _ in starting:
                pass

    def map(self, fn, evaluator, items, *, gpu=False):
        from joblib import delayed
        if not items:
            return iter(())
        self._await_start()
        return self._parallel(delayed(fn)(evaluator, item) for item in items)

    def close(self) -> None:
        try:
            self._await_start()
        except Exception:   # noqa: BLE001 - a worker lost while starting: the pool goes
            pass            # anyway, and a close must not hide why the search ended
        finally:
            self._parallel.__exit__(None, None, None)


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

    def map(self, fn, evaluator, items, *, gpu=False):
        if not items:
            return iter(())
        ev = self._remote(evaluator)
        resources = {self.gpu_resource: 1} if gpu else None
        futures = [self.client.submit(fn, ev, item, pure=False, resources=resources)
                   for item in items]
        return self._in_order(futures)

    @staticmethod
    def _in_order(futures):
        try:
            for f in futures:
                yield f.result()
        finally:
            for f in futures:
                f.cancel()

    def close(self) -> None:
        self.client.close()


def make_pool(parallel, warm: Evaluator | None = None) -> Pool:
    """The pool a ``[parallel]`` config names; ``warm``: the evaluator its local workers
    set up as they start (see :class:`JoblibPool`)."""
    if parallel.scheduler:
        return DaskPool(parallel.scheduler, parallel.gpu_resource)
    if parallel.n_jobs == 1:
        return InlinePool()
    return JoblibPool(parallel.n_jobs, warm)
