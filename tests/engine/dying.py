"""Processes that die as the OOM killer would have them die: SIGKILL, at a chosen call.

Deaths are counted across processes in a folder (``ASMEVO_TEST_DIE_DIR``): every
counted call appends a byte to ``calls``; the call that makes it ``nth`` bytes long
kills its own process, once (``killed`` is created exclusively), or, with
``again``, also every later call on the same candidate (so its retry dies too).

:class:`DyingEvaluator` wraps an evaluator and kills the pool worker that evaluates
(picklable by reference, so it works in loky's spawned workers too);
:func:`kill_isolation_children` makes the differential run kill its isolation child
(installed in the run's process before the pool forks, so every pool worker and
every isolation child forked from them inherits it).
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, replace
from pathlib import Path

from asmevo.engine.evaluator import Evaluator


def _count(folder: Path, nth: int, tag: str, again: bool) -> bool:
    """Whether this call is the one to die (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    victim = folder / "victim"
    if again and victim.exists() and victim.read_text() == tag:
        return True
    fd = os.open(folder / "calls", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, b".")
        calls = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if calls != nth:
        return False
    try:
        os.close(os.open(folder / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    victim.write_text(tag)
    return True


def die_here() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class DyingEvaluator(Evaluator):
    """``base``, except that the ``nth`` evaluation kills the process doing it."""

    base: object
    folder: str
    nth: int
    again: bool = False

    def __getattr__(self, name):
        if name.startswith("__") or name in ("base", "folder", "nth", "again"):
            raise AttributeError(name)
        return getattr(self.base, name)

    # what Evaluator declares with a default is the base's, not the default
    target = property(lambda self: self.base.target)
    forks = property(lambda self: self.base.forks)

    def warm(self, worker: bool = True) -> None:
        self.base.warm(worker=worker)

    def assembly(self, edits):
        return self.base.assembly(edits)

    def built_assembly(self, edits):
        return self.base.built_assembly(edits)

    def inputs(self):
        return self.base.inputs()

    def check(self):
        self.base.check()

    def build(self, edits):
        return self.base.build(edits)

    def moved(self, where):
        """On a Dask worker: the same deaths, ``base`` reading the run's files there."""
        return replace(self, base=self.base.moved(where))

    def evaluate(self, edits):
        from asmevo.engine.individual import chain_key
        if _count(Path(self.folder), self.nth, chain_key(tuple(edits)), self.again):
            die_here()
        return self.base.evaluate(edits)


def kill_isolation_children(folder: str, nth: int, again: bool = False) -> None:
    """Make the ``nth`` differential run (counted over the whole run) kill its isolation
    child, in this process and every process forked from it."""
    from asmevo.verify import evaluate

    real = evaluate._run_differential

    def dying(ctx, data):
        import hashlib
        if _count(Path(folder), nth, hashlib.sha256(data).hexdigest(), again):
            die_here()
        return real(ctx, data)

    dying.__module__, dying.__qualname__ = real.__module__, real.__qualname__
    evaluate._run_differential = dying      # pickled by name: children find this one


def from_environment(run) -> None:
    """``ASMEVO_TEST_DIE=worker:N|isolation:N[:again]`` (and ``ASMEVO_TEST_DIE_DIR``) on
    an open run, before its pool starts."""
    spec = os.environ.get("ASMEVO_TEST_DIE")
    if not spec:
        return
    where, nth, *rest = spec.split(":")
    folder, again = os.environ["ASMEVO_TEST_DIE_DIR"], rest == ["again"]
    if where == "worker":
        run.evaluator = DyingEvaluator(run.evaluator, folder, int(nth), again)
    elif where == "isolation":
        kill_isolation_children(folder, int(nth), again)
    else:
        raise ValueError(f"ASMEVO_TEST_DIE={spec!r}: worker:N or isolation:N[:again]")
