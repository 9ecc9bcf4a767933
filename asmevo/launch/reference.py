"""A spec's ``reference.py``, run in a child process with a time and a memory limit.

``reference.py`` is Python: whoever can write a spec can run code as the user, so
a spec, like a build script, is code the user trusts (never one fetched from
somewhere and checked blindly). Even trusted, it runs apart from asmevo: a
forked child imports it and calls the function, under ``ASMEVO_REFERENCE_SECONDS``
of wall clock and ``ASMEVO_REFERENCE_MEMORY_BYTES`` of address space beyond what
the parent had when it forked. The result comes back through a pipe as numpy's
``.npz`` (no pickle); a reference that raises, runs past its time, runs out of
memory, dies, or returns anything but a dict of numeric arrays is one error
naming the file (the caller's type: :mod:`asmevo.launch.spec` passes its
SpecError). The parent never imports the module.
"""
from __future__ import annotations

import io
import os
import resource
import select
import signal
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asmevo import knobs
from asmevo.lifetime import set_parent_death_signal
from asmevo.errors import AsmevoError

_OK, _FAILED = b"+", b"-"
_MESSAGE_CHARS = 300


class Reference:
    """The function ``name`` of ``path``, each call run in a child process."""

    def __init__(self, path: Path, name: str, error: type[AsmevoError] = AsmevoError):
        self.path, self.name, self.error = Path(path), name, error

    def __call__(self, *args: Any) -> dict[str, np.ndarray]:
        return in_child(self.path, self.name, lambda fn: fn(*args), self.error)

    def __repr__(self) -> str:
        return f"Reference({str(self.path)!r}, {self.name!r})"


def check(path: Path, name: str, error: type[AsmevoError] = AsmevoError) -> None:
    """``error`` unless ``path`` imports (in a child) and has a function ``name``."""
    in_child(path, name, lambda fn: None, error)


def expected(path: Path, name: str, args: dict, params: dict,
             error: type[AsmevoError] = AsmevoError) -> dict[str, np.ndarray]:
    """The reference's outputs on ``args``: it takes ``(args)`` or ``(args, params)``."""
    def call(fn: Callable) -> Any:
        import inspect
        try:
            n = len(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            n = 1
        return fn(args, params) if n >= 2 else fn(args)
    return in_child(path, name, call, error)


def in_child(path: Path, name: str, work: Callable[[Callable], Any],
             error: type[AsmevoError] = AsmevoError) -> dict[str, np.ndarray]:
    """``work(fn)`` for the function ``name`` of ``path``, in a forked child within the
    limits; its dict of arrays (empty for None)."""
    seconds = knobs.REFERENCE_SECONDS.value
    memory = knobs.REFERENCE_MEMORY_BYTES.value
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child: never returns
        os.close(r)
        _child(w, path, name, work, memory)
    os.close(w)
    try:
        status, payload = _collect(r, pid, time.monotonic() + seconds)
    finally:
        os.close(r)
    if status is None:
        raise error(f"reference.py ran past {seconds:,} s (set {knobs.REFERENCE_SECONDS.env} "
                        "to allow more)", path=str(path))
    if payload[:1] == _OK and status == 0:
        return _arrays(payload[1:], path, error)
    if payload[:1] == _FAILED:
        message = payload[1:].decode("utf-8", "replace")
    else:
        message = f"its process ended ({_exit(status)})"
    if "MemoryError" in message:
        message += (f" (it may use {memory:,} bytes more than asmevo: set "
                    f"{knobs.REFERENCE_MEMORY_BYTES.env} to allow more)")
    raise error(f"reference.py failed: {message}", path=str(path))


def _collect(fd: int, pid: int, deadline: float) -> tuple[int | None, bytes]:
    """(exit status, or None when it ran past ``deadline`` and was killed; what it wrote)."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, b""
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    return os.waitpid(pid, 0)[1], b"".join(chunks)


def _exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by {signal.Signals(sig).name}" if sig in signal.valid_signals() \
            else f"killed by signal {sig}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _child(w: int, path: Path, name: str, work: Callable, memory: int) -> None:
    code = 1
    try:
        set_parent_death_signal()
        _limit_memory(memory)
        out = io.BytesIO()
        result = work(_load(path, name))
        np.savez(out, **{"b_" + k: v for k, v in _checked(result).items()})
        _write(w, _OK + out.getvalue())
        code = 0
    except BaseException as exc:       # noqa: BLE001 - everything goes back as one line
        text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        try:
            _write(w, _FAILED + text[:_MESSAGE_CHARS].encode("utf-8", "replace"))
        except BaseException:           # noqa: BLE001 - the parent sees the exit status
            pass
    finally:
        os._exit(code)


def _limit_memory(extra: int) -> None:
    """Address space: what this process maps now plus ``extra`` bytes."""
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = mapped + extra
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _load(path: Path, name: str) -> Callable:
    import importlib.util
    mspec = importlib.util.spec_from_file_location(f"asmevo_ref_{path.parent.name}", path)
    if mspec is None or mspec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    fn = vars(mod).get(name)
    if not callable(fn):
        raise LookupError(f"no function {name!r}")
    return fn


def _checked(result: Any) -> dict[str, np.ndarray]:
    if result is None:
        return {}
    if not isinstance(result, dict) or not all(isinstance(k, str) for k in result):
        raise TypeError(f"returns {type(result).__name__}, not a dict of buffer names to arrays")
    out = {}
    for k, v in result.items():
        a = np.asarray(v)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"returns {a.dtype} values for {k!r}, not numbers")
        out[k] = a
    return out


def _arrays(payload: bytes, path: Path, error: type[AsmevoError]) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            return {k[2:]: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise error(f"reference.py's result could not be read back ({exc})",
                        path=str(path)) from None


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
