"""Run one evaluation step in a child process with a wall-clock limit.

A candidate may hang, exhaust memory or crash the interpreter (a bug in a
device runtime, a GPU fault). None of that may take the search down: the
child's death becomes a verdict and the parent carries on. A child killed by
SIGKILL (the OOM killer, or ``kill -9`` from outside: nothing the candidate does
sends it) says nothing about the candidate, so its call runs once more in a fresh
process; killed again, the verdict is ``worker-died``, which the engine does not
keep as the candidate's own (it judges the candidate again when it meets it). A :class:`Worker`
serves call after call until one of them times out, crashes or faults, and is
replaced then: forked where possible (the emulator), so large read-only state
(K0's reference results) is shared for free and a candidate costs no process
start; spawned on GPU devices, where a fork would not keep the GPU context
(see :func:`run_isolated`).
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Pipe
from typing import Any, Callable

from asmevo.lifetime import die_with_parent, set_parent_death_signal
from asmevo.verdict import Verdict


def _child(conn, parent, fn, args) -> None:
    # forked by a thread that waits for this child: the kernel's parent-death signal
    # (bound to that thread) ends it the moment its parent dies, even mid-C-code
    set_parent_death_signal()
    if os.getppid() != parent:
        os._exit(1)
    try:
        result = ("ok", fn(*args))
    except BaseException as exc:  # report everything: the parent decides
        result = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
    try:
        conn.send_bytes(pickle.dumps(result))
    finally:
        conn.close()


class _Child:
    """A child process started without :mod:`multiprocessing`.

    ``fork``: ``os.fork``, the target run in the copy. ``spawn``: a fresh interpreter
    (``posix_spawn`` of this Python, the connection on its fd 3, this process's
    ``sys.path`` and the pickled target sent through it). multiprocessing would refuse
    both in a daemonic process, and every worker process of a standard Dask deployment
    is one (``dask worker``'s nanny, ``LocalCluster``, dask-jobqueue); its spawn also
    re-runs the parent's ``__main__`` and start method (loky's, inside joblib). The
    daemon flag only makes a process end its children as it exits: ours die with their
    parent anyway (:mod:`asmevo.lifetime`).
    """

    def __init__(self, pid: int):
        self.pid = pid
        self._code: int | None = None

    @property
    def exitcode(self) -> int | None:
        """As multiprocessing's: the exit status, minus the signal that ended it, or None
        while it runs."""
        if self._code is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:       # reaped elsewhere: its status is lost
                self._code = -signal.SIGKILL
                return self._code
            if pid:
                self._code = os.waitstatus_to_exitcode(status)
        return self._code

    def is_alive(self) -> bool:
        return self.exitcode is None

    def join(self, timeout: float) -> None:
        deadline, pause = time.monotonic() + timeout, 0.001
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


_BOOT = ("import pickle, sys\n"
         "from multiprocessing.connection import Connection\n"
         "conn = Connection(3)\n"
         "sys.path[:0] = pickle.loads(conn.recv_bytes())\n"
         "target, args = pickle.loads(conn.recv_bytes())\n"
         "target(conn, *args)\n")


def _start(method: str, target: Callable, mine, theirs, args: tuple) -> _Child:
    """``target(theirs, *args)`` in a new child (see :class:`_Child`); ``mine``: this
    process's end of the connection, closed in a forked child."""
    if method == "fork":
        pid = os.fork()
        if pid == 0:                    # the child: never returns
            code = 1
            try:
                mine.close()
                target(theirs, *args)
                code = 0
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except (AttributeError, OSError, ValueError):
                        pass
                os._exit(code)
        return _Child(pid)
    if method != "spawn":
        raise ValueError(f"unknown start method {method!r} (fork or spawn)")
    argv = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", _BOOT]
    pid = os.posix_spawn(sys.executable, argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, theirs.fileno(), 3)])
    child = _Child(pid)
    try:
        mine.send_bytes(pickle.dumps(sys.path))
        mine.send_bytes(pickle.dumps((target, args)))
    except OSError:         # died as it started: the caller finds it dead
        child.join(5)
    except BaseException:   # the call cannot be pickled: no child waits for it
        _kill(child)
        raise
    return child


class _Died:
    """A call whose process ended without answering, with its exit code."""

    def __init__(self, code: int | None):
        self.code = code

    @property
    def killed(self) -> bool:
        return self.code == -signal.SIGKILL

    def verdict(self, again: bool = False) -> Verdict:
        if again and self.killed:
            return Verdict("worker-died", "the evaluating process was killed by SIGKILL twice "
                           "(out of memory, or killed from outside): no verdict",
                           {"exit_code": self.code})
        return Verdict("crash", f"evaluating process died (exit code {self.code})",
                       {"exit_code": self.code})


def _once_more(call: Callable[[], Any]) -> Any | Verdict:
    """``call()``, and once more if its process was killed by SIGKILL; the verdict of a
    process that died."""
    got = call()
    if isinstance(got, _Died) and got.killed:
        again = call()
        return again.verdict(again=True) if isinstance(again, _Died) else again
    return got.verdict() if isinstance(got, _Died) else got


def run_isolated(fn: Callable[..., Any], *args, timeout: float = 60.0,
                 method: str = "fork") -> Any | Verdict:
    """``fn(*args)`` in a child process; a Verdict if it timed out or died (once more,
    in a fresh child, where SIGKILL ended it).

    ``method="spawn"`` starts a fresh interpreter: needed where the parent holds
    a GPU context (CUDA and HIP contexts do not survive ``fork``); ``fn`` and its
    arguments must then be importable and picklable, and per-process caches
    start cold in the child.
    """
    return _once_more(lambda: _run_child(fn, args, timeout, method))


def _run_child(fn, args, timeout: float, method: str) -> Any | Verdict | _Died:
    parent, child = Pipe(duplex=True)
    try:
        try:
            proc = _start(method, _child, parent, child, (os.getpid(), fn, args))
        finally:
            child.close()
        if not parent.poll(timeout):
            _kill(proc)
            return Verdict("timeout", f"evaluation exceeded its {timeout:.0f} s wall-clock limit")
        try:
            status, payload = pickle.loads(parent.recv_bytes())
        except EOFError:
            proc.join(5)
            return _Died(proc.exitcode)
    finally:
        parent.close()
    proc.join(5)
    if proc.is_alive():
        _kill(proc)
    if status == "error":
        return Verdict("crash", f"evaluation raised {payload.splitlines()[0]}",
                       {"traceback": payload})
    return payload


def _serve(conn, parent: int, main_thread: bool) -> None:
    """A worker's loop: one pickled ``(fn, args)`` in, one pickled result out.

    It dies with its parent; by the kernel's parent-death signal as well only where
    the main thread started it (the signal follows the starting thread, and a
    worker outlives a helper thread that happened to start it).

    What the worker holds as it starts (a forked one: its parent's K0 state, decoded
    programs, reference runs) lives as long as it does: ``gc.freeze`` leaves it out of
    every later collection, which then neither walks those objects nor writes to
    the pages they share with the parent."""
    gc.freeze()
    die_with_parent(parent, death_signal=main_thread)
    while True:
        try:
            fn, args = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            result = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - report everything: the parent decides
            result = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
        conn.send_bytes(pickle.dumps(result))


# Verdict statuses after which a worker's process is not trusted with the next call:
# a GPU fault leaves its context unusable, a crash or timeout leaves it in any state.
_UNTRUSTED = frozenset({"fault", "crash", "timeout", "worker-died"})


class Worker:
    """A child process (spawned by default) that runs calls one at a time.

    Its per-process caches (K0's recovered program and reference runs, a GPU
    context) survive from call to call, which is what makes it cheaper than a
    fresh child per candidate. After a call that times out, dies, raises, or
    returns a Verdict whose status is fault/crash/timeout, the process is
    killed and the next call starts a new one, so no candidate is judged in a
    process an earlier candidate may have broken.
    """

    def __init__(self, method: str = "spawn", max_calls: int | None = None):
        self.method = method
        self.max_calls = max_calls  # calls one process serves before a fresh one (None: any)
        self.calls = 0
        self._proc = None
        self._conn = None
        self.started = 0            # processes started so far (tests, reports)
        self.warm: set = set()      # what the current process has set up (see evaluate.py)
        self._setups: dict = {}     # key -> the call that set it up (see setup())

    def _start(self) -> None:
        parent, child = Pipe(duplex=True)
        main = threading.current_thread() is threading.main_thread()
        try:
            self._proc = _start(self.method, _serve, parent, child, (os.getpid(), main))
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self._conn = parent
        self.started += 1
        self.calls = 0
        self.warm = set()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            _kill(self._proc)
        self._proc = self._conn = None

    def setup(self, key, fn: Callable[..., Any], *args, timeout: float = 60.0) -> None:
        """Set up state ``key`` in the current process (``fn(*args)``, e.g. K0's reference
        runs) and remember how: a call retried after SIGKILL runs in a fresh process that
        is set up the same way first, outside the call's own time limit."""
        self._setups[key] = (fn, args, timeout)
        self.call(fn, *args, timeout=timeout)
        self.warm.add(key)

    def call(self, fn: Callable[..., Any], *args, timeout: float = 60.0,
             counted: bool = True) -> Any | Verdict:
        """``fn(*args)`` in the worker; a Verdict if it timed out, died or raised (run
        once more, in a fresh process set up as the killed one was, where SIGKILL ended
        it). ``counted=False``: a call that does not count towards ``max_calls`` (a second
        step of the same candidate)."""
        warm, tries = set(self.warm), []

        def attempt():
            if tries:                   # the retry: a fresh process, set up as before
                self.close()
                self._start()
                for key in warm & self._setups.keys():
                    setup, setup_args, limit = self._setups[key]
                    self._call(setup, setup_args, limit, False)
                    self.warm.add(key)
            tries.append(1)
            return self._call(fn, args, timeout, counted and len(tries) == 1)
        return _once_more(attempt)

    def _call(self, fn, args, timeout: float, counted: bool) -> Any | Verdict | _Died:
        if self._proc is None or not self._proc.is_alive() or \
                (self.max_calls is not None and self.calls >= self.max_calls):
            self.close()
            self._start()
        self.calls += counted
        try:
            self._conn.send_bytes(pickle.dumps((fn, args)))
            if not self._conn.poll(timeout):
                self.close()
                return Verdict("timeout", f"evaluation exceeded its {timeout:.0f} s wall-clock limit")
            status, payload = pickle.loads(self._conn.recv_bytes())
        except (EOFError, OSError, BrokenPipeError):
            if self._proc is not None:
                self._proc.join(5)
            code = self._proc.exitcode if self._proc is not None else None
            self.close()
            return _Died(code)
        if status == "error":
            self.close()
            return Verdict("crash", f"evaluation raised {payload.splitlines()[0]}",
                           {"traceback": payload})
        if isinstance(payload, Verdict) and payload.status in _UNTRUSTED:
            self.close()
        return payload


_WORKERS: dict[tuple[int, str], Worker] = {}


def worker(method: str = "spawn", max_calls: int | None = None) -> Worker:
    """This process's shared worker for ``method`` (one per parent process: a process
    forked from one that has a worker starts its own)."""
    key = (os.getpid(), method)
    w = _WORKERS.get(key)
    if w is None:
        w = _WORKERS[key] = Worker(method, max_calls)
    return w


def _kill(proc) -> None:
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.join(5)
