"""Worker processes die with the process that started them.

``kill -9`` of ``asmevo run`` gives its children no chance to clean up: loky
workers idle for minutes waiting for work that never comes (and keep loky's
resource tracker alive through the pipe they inherited), an isolation child
runs its candidate to the end. Each child therefore watches its parent: the
kernel's parent-death signal (``PR_SET_PDEATHSIG``) where the child's life is
bound to the thread that started it, and a watch thread otherwise (the signal
follows the parent *thread*, so a pool that starts workers from a helper thread
would see them killed when that thread ends).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
_WATCHED: set[int] = set()
_GUARD = threading.Lock()


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` when the parent thread ends (Linux only);
    False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent: int | None = None, *, interval: float = 0.2,
                    death_signal: bool = False) -> None:
    """Kill this process (SIGKILL) as soon as ``parent`` (default: the current parent)
    is gone. Idempotent per parent, so a pool may call it before every task.

    ``death_signal`` also sets the kernel's parent-death signal: immediate, and it
    works while this process is stuck in C code holding the GIL, but use it only
    where the parent thread that started this process outlives it.
    """
    parent = os.getppid() if parent is None else parent
    with _GUARD:
        if parent in _WATCHED:
            return
        _WATCHED.add(parent)
    if death_signal:
        set_parent_death_signal()
    if os.getppid() != parent:          # gone before we looked: reparented already
        os.kill(os.getpid(), signal.SIGKILL)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name=f"asmevo-watch-parent-{parent}", daemon=True).start()


def _forget_watches() -> None:
    """In a forked child: the parent's watch threads did not survive the fork."""
    _WATCHED.clear()


os.register_at_fork(after_in_child=_forget_watches)
