"""``asmevo serve DIR [--port N] [--host H]``: the dashboard of a run, an ablation or a folder of runs."""
from __future__ import annotations

import argparse
from pathlib import Path

from asmevo.errors import AsmevoError


class ServeError(AsmevoError):
    """The dashboard cannot start (nothing to serve, a missing extra, a busy port)."""


def _cmd_serve(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if not root.is_dir():
        raise ServeError("not a directory (give a run directory, an ablation's output or a "
                         "folder of runs)", path=str(root))
    try:
        from asmevo.serve.app import serve
    except ModuleNotFoundError as exc:
        raise ServeError(f"the dashboard needs {exc.name}: pip install -e '.[serve]'") from None
    from asmevo.serve.snapshot import walk_runs
    if not walk_runs(root):
        raise ServeError("no run directory (archive.db) here or below", path=str(root))
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.public:
        raise ServeError(f"--host {args.host} would expose the dashboard beyond this machine; "
                         "add --public if that is what you want")
    try:
        serve(root, host=args.host, port=args.port, allow_hosts=args.allow_host)
    except OSError as exc:
        raise ServeError(f"cannot listen on {args.host}:{args.port} ({exc.strerror})") from None
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="live read-only web dashboard of runs and ablations")
    s.add_argument("dir", help="a run directory, an ablation's output, or a folder of runs")
    s.add_argument("--port", type=int, default=8050, help="0 picks a free port")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--public", action="store_true", help="allow a non-loopback --host")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name the page may be opened by (a proxy's, a DNS name); "
                        "requests naming any other host are refused")
    s.set_defaults(func=_cmd_serve)
