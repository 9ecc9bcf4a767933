"""Running an external tool: no shell, its own process group, a limit scaled to its input.

Every tool asmevo starts (llvm-mc, ld.lld, llvm-objdump, clang, nvdisasm, ptxas)
goes through :func:`run_tool`. A tool that hangs on a hostile input (llvm-mc 19
spun at 100% CPU on one Cyrillic letter) is killed together with anything it
started once its time is up, so a search worker never waits on it for long: the
limit is a few seconds plus a term per byte of input (:func:`time_limit`),
times ``ASMEVO_TOOL_TIMEOUT_SCALE`` for a slow machine.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess

from asmevo import knobs

BASE_S = 20.0          # seconds any tool call may take, however small its input
PER_MIB_S = 60.0       # plus this per MiB of input (files named in the arguments, stdin)


def input_bytes(args: list[str], stdin: bytes | None = None) -> int:
    """Bytes a tool reads: its stdin and every argument that names an existing file."""
    total = len(stdin or b"")
    for a in args:
        try:
            if os.path.isfile(a):
                total += os.path.getsize(a)
        except (OSError, ValueError):
            continue
    return total


def time_limit(nbytes: int) -> float:
    """Seconds a tool may run on ``nbytes`` of input."""
    return (BASE_S + PER_MIB_S * nbytes / (1 << 20)) * knobs.tool_timeout_scale()


def describe_limit(seconds: float, nbytes: int) -> str:
    """How a limit was set, for a timeout message (names the knob to raise)."""
    return (f"{seconds:.0f} s (the limit for {nbytes:,} bytes of input; raise "
            f"{knobs.TOOL_TIMEOUT_SCALE} to allow more)")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_tool(cmd: list[str], *, stdin: bytes | None = None, timeout: float | None = None,
             cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` (an argument list) to completion, capturing stdout and stderr as bytes.

    ``timeout`` defaults to :func:`time_limit` of the input. On timeout (or an
    interrupt) the tool's whole process group is killed and reaped, then
    :class:`subprocess.TimeoutExpired` is raised with ``timeout`` set.
    """
    cmd = [str(c) for c in cmd]
    if timeout is None:
        timeout = time_limit(input_bytes(cmd[1:], stdin))
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except BaseException:
        _kill_group(proc)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def exit_status(code: int) -> str:
    """``exit 1`` or ``killed by SIGSEGV``: how a tool ended, in words."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def first_diagnostic(stderr: str) -> str:
    """A tool's stderr condensed to one line: its first error (temporary paths cut to
    the file name), then how many more lines there were."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return "no message"
    pick = next((ln for ln in lines if "error:" in ln or "LLVM ERROR" in ln
                 or "fatal" in ln.lower()), lines[0])
    pick = _TEMP_DIR.sub("", pick)
    if len(pick) > 300:
        pick = pick[:300] + "..."
    more = len(lines) - 1
    return pick + (f" (+{more} more lines: --verbose)" if more else "")


_TEMP_DIR = re.compile(r"/\S*?asmevo[-_][a-z]+[-_][a-z0-9_]{8}/")   # tempfile dirs we made
