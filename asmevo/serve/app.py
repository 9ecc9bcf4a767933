"""The dashboard's web application (Flask): one page, JSON endpoints, nothing written.

Served root: a run directory, an ablation's output directory, or any folder of
run directories. Runs are addressed by their path relative to the root (``?run=``, default the
root itself), checked
against the directories actually found there (so no URL reaches outside it).
The page polls ``/api/token``, which changes with the archive's
files, and refetches when it does. A damaged archive is a JSON error (HTTP 409)
for the API and an error panel on the page, never a crash of the server.
"""
from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

from flask import Flask, Response, abort, jsonify, request, send_file

from archive.store import ArchiveError
from asmevo.errors import AsmevoError
from asmevo.serve import listing, views
from asmevo.serve.snapshot import Snapshot, walk_runs

STATIC = Path(__file__).with_name("static")
ABLATION_TABLES = ("summary", "operators", "kernels", "cells", "timings")


def plotly_js() -> Path:
    """plotly.min.js as the ``plotly`` package ships it (no CDN: the page works offline)."""
    import plotly
    path = Path(plotly.__file__).with_name("package_data") / "plotly.min.js"
    if not path.is_file():
        raise AsmevoError(f"plotly is installed without its plotly.min.js ({path})")
    return path


class Runs:
    """The run directories under the root, each with its own snapshot (made on first use)."""

    def __init__(self, root: Path):
        self.root = root
        self._snaps: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return [str(p.relative_to(self.root)) or "." for p in walk_runs(self.root)]

    def get(self, name: str) -> Snapshot:
        with self._lock:
            snap = self._snaps.get(name)
            if snap is None:
                if name not in self.names():
                    abort(404, f"no run {name!r} under the served directory")
                snap = self._snaps[name] = Snapshot(self.root / name if name != "." else self.root)
            return snap

    def close(self) -> None:
        for s in self._snaps.values():
            s.close()


def _ablation(root: Path) -> dict | None:
    """The tables ``asmevo ablate`` wrote (CSV), if the root is an ablation's output."""
    if not (root / "summary.csv").is_file():
        return None
    tables = {}
    for name in ABLATION_TABLES:
        path = root / f"{name}.csv"
        if path.is_file():
            with open(path, newline="") as f:
                tables[name] = list(csv.DictReader(io.StringIO(f.read())))
    return {"tables": tables, "plot": (root / "best_vs_evaluations.png").is_file(),
            "markdown": (root / "summary.md").read_text() if (root / "summary.md").is_file()
            else ""}


def create_app(root: str | Path) -> Flask:
    """The dashboard over ``root`` (see the module docstring): the page and its static
    files, the served root's runs and ablation tables, and each run's archive views."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise AsmevoError("not a directory", path=str(root))
    app = Flask("asmevo.serve", static_folder=None)
    runs = Runs(root)
    app.extensions["asmevo_runs"] = runs
    _page_routes(app)
    _root_routes(app, root, runs)
    _archive_routes(app, runs)

    @app.errorhandler(404)
    def not_found(exc):
        return jsonify({"error": getattr(exc, "description", "not found")}), 404

    return app


def _run() -> str:
    """The run the request addresses (``?run=``, relative to the root; default the root)."""
    return request.args.get("run", ".")


def _page_routes(app: Flask) -> None:
    """The page, its favicon and its static files (plotly from the installed package)."""

    @app.get("/")
    def index():
        return send_file(STATIC / "index.html", mimetype="text/html", max_age=0)

    @app.get("/favicon.ico")
    def favicon():
        return Response(status=204)

    @app.get("/static/<path:name>")
    def static_file(name: str):
        if name == "plotly.min.js":
            return send_file(plotly_js(), mimetype="text/javascript", max_age=3600)
        path = (STATIC / name).resolve()
        if path.parent != STATIC.resolve() or not path.is_file():
            abort(404)
        return send_file(path, max_age=0)


def _root_routes(app: Flask, root: Path, runs: Runs) -> None:
    """What the served root holds: its runs, an ablation's tables and plot, and the
    token that changes with a run's archive files."""

    @app.get("/api/root")
    def api_root():
        return jsonify({"root": str(root), "runs": runs.names(), "ablation": _ablation(root)})

    @app.get("/api/ablation/plot.png")
    def ablation_plot():
        path = root / "best_vs_evaluations.png"
        if not path.is_file():
            abort(404)
        return Response(path.read_bytes(), mimetype="image/png")

    @app.get("/api/token")
    def token():
        return jsonify({"token": runs.get(_run()).token})


def _archive_routes(app: Flask, runs: Runs) -> None:
    """The views of one run's archive as JSON; a damaged archive is an HTTP 409 error."""

    def with_archive(fn, *args):
        try:
            return jsonify(fn(runs.get(_run()).archive(), *args))
        except (ArchiveError, AsmevoError) as exc:
            return jsonify({"error": str(exc)}), 409

    @app.get("/api/summary")
    def summary():
        return with_archive(views.summary)

    @app.get("/api/curves")
    def curves():
        return with_archive(views.curves)

    @app.get("/api/operators")
    def operators():
        return with_archive(views.operators)

    @app.get("/api/individuals")
    def individuals():
        return with_archive(views.individuals)

    @app.get("/api/individual/<ind_id>")
    def individual(ind_id: str):
        return with_archive(views.individual, ind_id)

    @app.get("/api/lineage")
    def lineage():
        return with_archive(views.lineage, request.args.get("ind") or None)

    @app.get("/api/diff/<ind_id>")
    def diff(ind_id: str):
        return with_archive(listing.side_by_side, ind_id)


def serve(root: str | Path, host: str = "127.0.0.1", port: int = 8050,
          ready: threading.Event | None = None) -> None:
    """Serve until interrupted (werkzeug's threaded server: one user, on loopback)."""
    from werkzeug.serving import make_server

    app = create_app(root)
    server = make_server(host, port, app, threaded=True)
    print(f"asmevo serve: http://{host}:{server.server_port}/  (read-only; Ctrl-C stops)",
          flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever()
    finally:
        app.extensions["asmevo_runs"].close()
