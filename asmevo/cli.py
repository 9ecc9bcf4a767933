"""The asmevo command: one subcommand per stage of the pipeline.

Exit codes: 0 ok; 1 the command ran and the answer is no (``roundtrip``: a
rebuild differs, ``verify``: K1 is not equal to K0); 2 bad input. Every expected
failure is an :class:`~asmevo.errors.AsmevoError` (or the archive's
:class:`~asmevo.archive.errors.ArchiveError`): one line on stderr naming the
file and the problem (a tool's whole diagnostics with ``--verbose``), exit 2; so is
a write the machine refuses (a full disk, a read-only or unwritable folder).
Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
import time

from asmevo.archive.errors import ArchiveError
from asmevo import __version__, hip_command, profile_command
from asmevo.ablate import command as ablate_command
from asmevo.emu import command as emu_command
from asmevo.engine import command as engine_command
from asmevo.errors import AsmevoError
from asmevo.serve import command as serve_command
from asmevo.verify import command as verify_command
from asmevo.verify import spec_command


def _cmd_inspect(args: argparse.Namespace) -> int:
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.route import with_route
    from asmevo.targets.amdgpu.summary import kernel_summaries, render
    from asmevo.targets.amdgpu.toolchain import find_toolchain

    try:
        co = load(args.file)
        if args.kernel:
            co.kernel(args.kernel)  # unknown names fail before any tool runs
        tc = find_toolchain(co.target.processor)
        sums = kernel_summaries(co, with_route(recover(co, tc=tc), tc=tc), args.kernel,
                                llvm=tc.describe())
    except AsmevoError as exc:
        raise exc.in_file(args.file)
    print(json.dumps(sums, indent=2) if args.json else render(sums))
    return 0


def _roundtrip_one(f: str) -> dict:
    """Recover + rebuild one file: the comparison, the route its candidates take, the LLVM."""
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.route import decide
    from asmevo.targets.amdgpu.toolchain import find_toolchain

    t0 = time.perf_counter()
    co = load(f)
    tc = find_toolchain(co.target.processor)
    program = recover(co, tc=tc)
    route, cmp = decide(program, tc=tc, cache=False)
    res = cmp.as_dict() if cmp is not None else {"path": f, "identical": False, "parts": {},
                                                  "differences": []}
    raw = sum(i.raw for fn in program.functions for i in fn.instructions)
    return res | {"raw_instructions": raw, "route": str(route),
                  "kernels": {k: str(route) for k in co.kernel_names},
                  "llvm": tc.describe(), "seconds": round(time.perf_counter() - t0, 4)}


def _cmd_roundtrip(args: argparse.Namespace) -> int:
    """Exit 2 if any file is bad input, else 1 if any rebuild differs, else 0."""
    results, bad, different = [], 0, 0
    for f in args.files:
        try:
            res = _roundtrip_one(f)
        except AsmevoError as exc:
            exc.in_file(f)
            report_error("roundtrip", exc, args.verbose)
            res = {"path": f, "identical": False, "error": str(exc)}
            bad += 1
        different += not res["identical"] and "error" not in res
        results.append(res)
        if not args.json and "error" not in res:
            if res["identical"]:
                parts = ", ".join(res["parts"])
                print(f"IDENTICAL  {f}  ({parts}; {res['seconds']:.2f}s; {res['llvm']}; "
                      f"route {res['route']})")
            else:
                print(f"DIFFERENT  {f}  ({res['llvm']}; route {res['route']})")
                for d in res["differences"]:
                    print(f"    {d['text']}")
    if args.json:
        print(json.dumps(results, indent=2))
    return 2 if bad else 1 if different else 0


def one_line(text: str) -> str:
    """``text`` on one line: its first line, and how many more there were."""
    lines = [ln for ln in str(text).splitlines() if ln.strip()] or [""]
    more = len(lines) - 1
    return lines[0] + (f" (+{more} more lines: --verbose)" if more else "")


def report_error(command: str, exc: AsmevoError | ArchiveError, verbose: bool = False) -> None:
    """The one stderr line of an expected failure (all of it, and the tool's own
    diagnostics, with ``--verbose``)."""
    if verbose:
        print(f"asmevo {command}: error: {exc}", file=sys.stderr)
        cause: BaseException | None = exc
        while cause is not None:        # wrapped errors keep the tool's text on the cause
            if isinstance(cause, (AsmevoError, ArchiveError)) and cause.detail:
                print(cause.detail.rstrip("\n"), file=sys.stderr)
                break
            cause = cause.__cause__
    else:
        print(f"asmevo {command}: error: {one_line(str(exc))}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="asmevo", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"asmevo {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="kernels, ABI, registers, occupancy of a code object")
    s.add_argument("file")
    s.add_argument("--kernel")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_inspect)

    s = sub.add_parser("roundtrip", help="recover + rebuild; report byte identity")
    s.add_argument("files", nargs="+")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_roundtrip)

    for module in _EXTENSIONS:
        module.add_parser(sub)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="on error, the whole message and the tools' own diagnostics; "
                   "info lines as it works (each retry of an LLM call)")
    for sp in sub.choices.values():
        if not any("--verbose" in a.option_strings for a in sp._actions):
            sp.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                            help="on error, the whole message and the tools' own diagnostics; "
                            "info lines as it works (each retry of an LLM call)")
    return p


# subcommands that live beside the stage they drive: module.add_parser(subparsers)
_EXTENSIONS = (hip_command, emu_command, profile_command, verify_command, spec_command, engine_command,
               ablate_command, serve_command)


# errors of the machine, not of the input: no space, no permission, a read-only filesystem
RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                             errno.EPERM})


# optional modules -> the extra that installs them (setup.cfg's extras_require)
EXTRAS = {"anthropic": "llm", "openai": "llm", "hip": "hip", "cuda": "cuda",
          "flask": "serve", "plotly": "serve", "matplotlib": "plot", "distributed": "distributed",
          "dask": "distributed"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one line for a feature whose optional package is not installed, or None
    when the missing module is not one an extra provides (then it is a bug)."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (f"this needs the '{extra}' extra ({top} is not installed): "
            f"pip install 'asmevo[{extra}]' (in a checkout: pip install -e '.[{extra}]')")


def _stdout_gone() -> int:
    """The reader of our output went away (``asmevo profile ... | head``): not an error.
    stdout is pointed at /dev/null so that the interpreter's last flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


class _Stderr(logging.Handler):
    """asmevo's log lines, on whatever ``sys.stderr`` is when each is written."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr)


_LOG_LINES = _Stderr()
_LOG_LINES.setFormatter(logging.Formatter("%(name)s: %(message)s"))


def _log_lines(verbose: bool) -> None:
    """Warnings on stderr always; with ``-v`` asmevo's INFO lines too (each retry of an
    LLM call: the attempt, the reason, the wait)."""
    log = logging.getLogger("asmevo")
    if _LOG_LINES not in log.handlers:
        log.addHandler(_LOG_LINES)
    _LOG_LINES.setLevel(logging.INFO if verbose else logging.WARNING)
    log.setLevel(logging.INFO if verbose else logging.NOTSET)


def main(argv: list[str] | None = None) -> int:
    """Every command (``--help`` and ``--version`` too) ends quietly, exit 0, when the
    reader of its output goes away."""
    try:
        code = _main(argv)
        sys.stdout.flush()          # a closed pipe shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except SystemExit as exc:       # argparse's --help, --version and usage errors
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_gone()
            return 0
        raise exc


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    _log_lines(args.verbose)
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        line = missing_extra(exc)
        if line is None:
            raise
        print(f"asmevo {args.command}: error: {line}", file=sys.stderr)
        return 2
    except (AsmevoError, ArchiveError) as exc:   # the archive's error is not an AsmevoError
        report_error(args.command, exc, args.verbose)
        return exc.exit_code
    except OSError as exc:
        if exc.errno not in RESOURCE_ERRNOS:
            raise
        # a write the machine refuses (full disk, read-only or unwritable folder) that no
        # layer named more precisely: the file and the reason, not a traceback
        where = exc.filename if exc.filename is not None else "(no file named)"
        print(f"asmevo {args.command}: error: {where}: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"asmevo {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
