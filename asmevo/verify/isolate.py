"""Run one evaluation step in a child process with a wall-clock limit.

A candidate may hang, exhaust memory or crash the interpreter (a bug in a
device runtime, a GPU fault). None of that may take the search down: the
child's death becomes a verdict and the parent carries on. Children are
forked where possible, so large read-only state (K0's reference results) is
shared for free; on GPU devices they are spawned (see :func:`run_isolated`).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import traceback
from typing import Any, Callable

from asmevo.verify.verdict import Verdict


def _child(conn, fn, args) -> None:
    try:
        result = ("ok", fn(*args))
    except BaseException as exc:  # report everything: the parent decides
        result = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
    try:
        conn.send_bytes(pickle.dumps(result))
    finally:
        conn.close()


def run_isolated(fn: Callable[..., Any], *args, timeout: float = 60.0,
                 method: str = "fork") -> Any | Verdict:
    """``fn(*args)`` in a child process; a Verdict if it timed out or died.

    ``method="spawn"`` starts a fresh interpreter: needed where the parent holds
    a GPU context (CUDA and HIP contexts do not survive ``fork``); ``fn`` and its
    arguments must then be importable and picklable, and per-process caches
    start cold in the child.
    """
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            _kill(proc)
            return Verdict("timeout", f"evaluation exceeded its {timeout:.0f} s wall-clock limit")
        try:
            status, payload = pickle.loads(parent.recv_bytes())
        except EOFError:
            proc.join(5)
            return Verdict("crash", f"evaluating process died (exit code {proc.exitcode})",
                           {"exit_code": proc.exitcode})
    finally:
        parent.close()
    proc.join(5)
    if proc.is_alive():
        _kill(proc)
    if status == "error":
        return Verdict("crash", f"evaluation raised {payload.splitlines()[0]}",
                       {"traceback": payload})
    return payload


def _kill(proc) -> None:
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.join(5)
