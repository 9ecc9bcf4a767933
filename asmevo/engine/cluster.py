"""The worker side of a search on a Dask cluster: set up as it joins, then run tasks.

The run registers a :class:`Setup` worker plugin with the scheduler, which sends it
to every worker there and to every worker that joins later (a replacement a nanny
starts, a batch job that begins). On each, it unpacks the run's files
(:mod:`asmevo.engine.shipping`: nothing is assumed shared), checks that the worker
can judge candidates (the evaluator's ``check``: the spec and its reference, K0
recovered with LLVM, an isolation child that starts), and only then gives the
worker the plugin's resource, which every task of the run asks for: a worker that
fails the check gets no task, and says why in one line (on its log, and through
the ``asmevo`` event topic to the run).

A task (:func:`run`) carries its function, the plugin's name and its item, never
the files. Each evaluation it returns is stamped with the worker's address (the
archive keeps it; ``asmevo report`` counts evaluations per worker).

A worker that dies mid-task has its tasks sent elsewhere by the scheduler. Like a
local pool (:mod:`asmevo.engine.parallel`), a task is run again once: one whose
workers died twice returns :class:`Lost` without running, which the run judges
``worker-died``.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path

from distributed import WorkerPlugin, get_client, get_worker
from distributed.core import Status

from asmevo.engine.shipping import Bundle, fingerprint
from asmevo.errors import AsmevoError
from asmevo.verdict import Evaluation

TOPIC = "asmevo"        # the event topic a worker that fails its setup reports on
RETRIES = 1             # times a task whose worker died is run again


class WorkerSetupError(AsmevoError):
    """A Dask worker that cannot judge this run's candidates (and gets none of its tasks)."""


@dataclass(frozen=True)
class Lost:
    """What a task returns instead of running when its workers died ``deaths`` times."""

    deaths: int


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: an asmevo error's message, else its type and first line."""
    lines = str(exc).strip().splitlines()
    if isinstance(exc, AsmevoError) and lines:
        return lines[0]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class Setup(WorkerPlugin):
    """A run's files and evaluator, sent to every worker; ``name`` is also the
    resource a worker has once it is ready."""

    def __init__(self, name: str, bundle: Bundle):
        self.name, self.bundle = name, bundle
        self.asmevo = fingerprint()     # the run's asmevo, which the worker's must be
        self.evaluator = None           # set up on the worker

    async def setup(self, worker) -> None:
        try:
            self.evaluator = await asyncio.to_thread(self._ready, worker.local_directory)
        except Exception as exc:        # noqa: BLE001 - any failure is this worker's one line
            why = f"Dask worker {worker.address}: {one_line(exc)}"
            worker.log_event(TOPIC, {"worker": worker.address, "error": why})
            raise WorkerSetupError(why) from None
        await worker.set_resources(**{self.name: worker.state.nthreads})
        if worker.status == Status.running:
            # the scheduler looks for the tasks a worker can take when it starts running,
            # not when its resources change: a pause and a resume make it look now
            worker.status = Status.paused
            worker.status = Status.running

    def _ready(self, base: str):
        if fingerprint() != self.asmevo:
            raise WorkerSetupError(f"its asmevo ({fingerprint()}) is not the run's "
                                   f"({self.asmevo}): install the run's version there")
        evaluator = self.bundle.evaluator(self.bundle.unpack(Path(base) / "asmevo-runs"))
        evaluator.check()
        return evaluator


def run(fn, name: str, item):
    """A task on a worker: ``fn(evaluator, item)`` on the evaluator that plugin ``name``
    set up here, each Evaluation in the result stamped with this worker's address."""
    worker = get_worker()
    deaths = _deaths(worker.get_current_task())
    if deaths > RETRIES:
        return Lost(deaths)
    plugin = worker.plugins.get(name)
    if plugin is None or plugin.evaluator is None:
        raise WorkerSetupError(f"Dask worker {worker.address} is not set up for this run")
    return stamped(fn(plugin.evaluator, item), worker.address)


def stamped(result, where: str):
    """``result`` with each Evaluation in it (itself, or an item of a tuple) saying
    ``where`` it was made."""
    if isinstance(result, Evaluation):
        return replace(result, worker=where)
    if isinstance(result, tuple):
        return tuple(replace(x, worker=where) if isinstance(x, Evaluation) else x
                     for x in result)
    return result


def _deaths(key) -> int:
    """How many workers died while running task ``key`` (the scheduler's count); 0
    where the scheduler does not say (it refuses functions sent to it)."""
    try:
        return int(get_client().run_on_scheduler(_suspicious, key))
    except Exception:       # noqa: BLE001 - then the scheduler's own limit applies
        return 0


def _suspicious(key, dask_scheduler=None) -> int:
    ts = dask_scheduler.tasks.get(key)
    return ts.suspicious if ts is not None else 0


def ready_workers(names: tuple[str, ...], dask_scheduler=None) -> int:
    """On the scheduler: the workers that have one of the resources ``names`` (set up
    for a run)."""
    have = set()
    for name in names:
        have |= {w for w, n in dask_scheduler.resources.get(name, {}).items() if n > 0}
    return len(have)
