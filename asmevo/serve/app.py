"""The dashboard's web application (Flask): one page, JSON endpoints, nothing written.

Served root: a run directory, an ablation's output directory, or any folder of
run directories. Runs are addressed by their path relative to the root (``?run=``, default the
root itself), checked
against the directories actually found there (so no URL reaches outside it).
The page polls ``/api/token``, which changes with the archive's
files, and refetches when it does. A damaged archive is a JSON error (HTTP 409)
for the API and an error panel on the page, never a crash of the server.

Everything an archive or the served folder holds is untrusted: the page builds
its DOM from text nodes (``static/dashboard.js``), no path an archive names is
read (K0 comes from the run's own blob store: :mod:`asmevo.serve.listing`), the
files read from the served folder must be regular files inside it of bounded
size, and a request whose ``Host`` is not the address the server is bound to is
refused (HTTP 421), so a web page cannot reach the dashboard by DNS rebinding.
"""
from __future__ import annotations

import csv
import io
import math
import socket
import sqlite3
import threading
from pathlib import Path

from flask import Flask, Response, abort, jsonify, request, send_file
from flask.json.provider import DefaultJSONProvider

from asmevo.archive.store import ArchiveError
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.serve import listing, views
from asmevo.serve.snapshot import Snapshot, walk_runs

STATIC = Path(__file__).with_name("static")
STATIC_FILES = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
ABLATION_TABLES = ("summary", "operators", "kernels", "cells", "timings")
TABLE_BYTES = 8 << 20          # an ablation table, plot or summary read at most
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HOSTS = "ASMEVO_HOSTS"         # app.config: the host names a request may address
PORT = "ASMEVO_PORT"           # app.config: the port it must address (None: any)


def finite(value):
    """``value`` with every NaN and infinity as the text JSON has no number for
    (``"NaN"``, ``"Infinity"``, ``"-Infinity"``): a verdict's details may hold them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


class StrictJSON(DefaultJSONProvider):
    """JSON that a browser's ``JSON.parse`` reads: Python's ``json`` writes a NaN as the
    bare token ``NaN``, which no browser parses ("Unexpected token 'N'")."""

    def dumps(self, obj, **kwargs) -> str:
        kwargs["allow_nan"] = False
        try:
            return super().dumps(obj, **kwargs)
        except ValueError:                  # a non-finite float somewhere: rare, so a 2nd pass
            return super().dumps(finite(obj), **kwargs)


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
                    abort(404, f"no run {name[:200]!r} under the served directory")
                snap = self._snaps[name] = Snapshot(self.root / name if name != "." else self.root)
            return snap

    def warm(self, name: str | None) -> None:
        """Start reading a run (its archive and digest) in the background: the page asks
        for it a moment later, after its scripts have loaded. An error is left for that
        request to meet and report."""
        names = self.names()
        name = name if name in names else (names[0] if names else None)
        if name is None:
            return

        def read() -> None:
            try:
                with self.get(name).lease() as view:
                    view.operators()
            except Exception:   # noqa: BLE001 - met again, and reported, by the request
                pass
        threading.Thread(target=read, name="asmevo-serve-warm", daemon=True).start()

    def close(self) -> None:
        for s in self._snaps.values():
            s.close()


def served_file(root: Path, name: str, what: str) -> bytes | None:
    """The bytes of ``root/name`` if it is there: a regular file inside the served root (a
    link out of it is refused) of at most :data:`TABLE_BYTES`; None if it is absent."""
    path = root / name
    if not path.exists() and not path.is_symlink():
        return None
    if not path.resolve().is_relative_to(root):
        raise AsmevoError(f"{what} leads out of the served directory", path=str(path))
    return read_input(path, what=what, limit=TABLE_BYTES)


def _ablation(root: Path) -> dict | None:
    """The tables ``asmevo ablate`` wrote (CSV), if the root is an ablation's output."""
    summary = served_file(root, "summary.csv", "ablation table")
    if summary is None:
        return None
    tables = {}
    for name in ABLATION_TABLES:
        data = summary if name == "summary" else served_file(root, f"{name}.csv",
                                                             "ablation table")
        if data is not None:
            text = data.decode("utf-8", errors="replace")
            try:
                tables[name] = list(csv.DictReader(io.StringIO(text)))
            except csv.Error as exc:
                raise AsmevoError(f"not a CSV table ({exc})", path=str(root / f"{name}.csv"))
    markdown = served_file(root, "summary.md", "ablation summary")
    plot = served_file(root, "best_vs_evaluations.png", "ablation plot")
    return {"tables": tables, "plot": plot is not None,
            "markdown": markdown.decode("utf-8", errors="replace") if markdown else ""}


def create_app(root: str | Path, hosts=LOOPBACK, port: int | None = None) -> Flask:
    """The dashboard over ``root`` (see the module docstring): the page and its static
    files, the served root's runs and ablation tables, and each run's archive views.
    ``hosts``/``port``: what a request's Host header may name (see :func:`serve`)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise AsmevoError("not a directory", path=str(root))
    app = Flask("asmevo.serve", static_folder=None)
    app.json = StrictJSON(app)
    app.config[HOSTS] = frozenset(h.lower() for h in hosts)
    app.config[PORT] = port
    runs = Runs(root)
    app.extensions["asmevo_runs"] = runs
    app.before_request(_check_host)
    _page_routes(app, runs)
    _root_routes(app, root, runs)
    _archive_routes(app, runs)

    @app.errorhandler(404)
    def not_found(exc):
        return jsonify({"error": exc.description}), 404

    @app.errorhandler(400)
    def bad_request(exc):
        return jsonify({"error": exc.description}), 400

    return app


def split_host(header: str) -> tuple[str, int | None]:
    """``name[:port]`` of a Host header (``[::1]:8050`` too); port None where absent."""
    name, port = header, None
    if header.startswith("["):
        name, _, rest = header[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
    elif header.count(":") == 1:
        name, port = header.split(":")
    try:
        return name.lower(), int(port) if port is not None else None
    except ValueError:
        return name.lower(), -1


def _check_host():
    """Refuse a request addressed to another name than the server's (DNS rebinding: a
    page of evil.example whose name now resolves to 127.0.0.1 sends Host: evil.example)."""
    from flask import current_app
    name, port = split_host(request.host)
    want = current_app.config[PORT]
    if name in current_app.config[HOSTS] and (want is None or (port or 80) == want):
        return None
    shown = request.host[:100]
    return jsonify({"error": f"Host {shown!r} is not an address of this dashboard; "
                             "open it by the address `asmevo serve` printed (or add "
                             "--allow-host NAME)"}), 421


def _page_routes(app: Flask, runs: Runs) -> None:
    """The page, its favicon and its static files (plotly from the installed package)."""

    @app.get("/")
    def index():
        runs.warm(request.args.get("run"))
        return send_file(STATIC / "index.html", mimetype="text/html", max_age=0)

    @app.get("/favicon.ico")
    def favicon():
        return Response(status=204)

    @app.get("/static/<path:name>")
    def static_file(name: str):
        if name == "plotly.min.js":
            return send_file(plotly_js(), mimetype="text/javascript", max_age=3600)
        if name not in STATIC_FILES:        # a fixed list: no path is built from the URL
            abort(404, "no such static file")
        return send_file(STATIC / name, mimetype=STATIC_FILES[name], max_age=0)


def _root_routes(app: Flask, root: Path, runs: Runs) -> None:
    """What the served root holds: its runs, an ablation's tables and plot, and the
    token that changes with a run's archive files."""

    @app.get("/api/root")
    def api_root():
        try:
            ablation = _ablation(root)
        except AsmevoError as exc:
            return jsonify({"error": str(exc)}), 409
        return jsonify({"root": str(root), "runs": runs.names(), "ablation": ablation})

    @app.get("/api/ablation/plot.png")
    def ablation_plot():
        try:
            data = served_file(root, "best_vs_evaluations.png", "ablation plot")
        except AsmevoError as exc:
            return jsonify({"error": str(exc)}), 409
        if data is None:
            abort(404, "no plot")
        return Response(data, mimetype="image/png")

    @app.get("/api/token")
    def token():
        return jsonify({"token": runs.get(_run()).token})


def _run() -> str:
    """The run the request addresses (``?run=``, relative to the root; default the root)."""
    return request.args.get("run", ".")


# what a crafted archive's values can raise in a view, besides the errors it names itself
_SHAPE_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
                 RecursionError)


def _archive_routes(app: Flask, runs: Runs) -> None:
    """The views of one run's archive as JSON; a damaged archive is an HTTP 409 error."""

    def with_archive(fn, *args):
        snap = runs.get(_run())
        try:
            with snap.lease() as view:      # kept open until the answer is made
                return jsonify(fn(view, *args))
        except (ArchiveError, AsmevoError) as exc:
            return jsonify({"error": str(exc)[:2000]}), 409
        except sqlite3.Error as exc:
            return jsonify({"error": f"{snap.db}: archive is corrupt or unreadable "
                                     f"({str(exc)[:200]})"}), 409
        except _SHAPE_ERRORS as exc:
            return jsonify({"error": f"{snap.db}: the archive holds a value the dashboard "
                                     f"cannot show ({type(exc).__name__}: "
                                     f"{str(exc)[:200]})"}), 409

    def number(name: str, default: int) -> int:
        raw = request.args.get(name, str(default))
        if not raw.isdigit() or len(raw) > 9:
            abort(400, f"{name} must be a whole number, not {raw[:40]!r}")
        return int(raw)

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
        return with_archive(views.individuals, request.args.get("order", "best"),
                            number("offset", 0), number("limit", views.PAGE))

    @app.get("/api/individual/<path:ind_id>")
    def individual(ind_id: str):
        return with_archive(views.individual, ind_id)

    @app.get("/api/lineage")
    def lineage():
        return with_archive(views.lineage, request.args.get("ind") or None)

    @app.get("/api/diff/<path:ind_id>")
    def diff(ind_id: str):
        return with_archive(listing.side_by_side, ind_id)

    @app.get("/api/conversation")
    def conversation():
        return with_archive(views.conversation, number("generation", 0), number("island", 0),
                            number("slot", 0))


def bound_hosts(host: str, extra=()) -> list[str]:
    """The names a request to a server bound to ``host`` may use: that address; the
    loopback names where it is one of them; the machine's names and addresses where it
    is every interface (0.0.0.0, ::); and ``extra`` (``--allow-host``)."""
    names = {host.strip("[]").lower(), *(h.lower() for h in extra)}
    if names & set(LOOPBACK):
        names |= set(LOOPBACK)
    if host in ("0.0.0.0", "::", ""):
        names |= set(LOOPBACK)
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name.lower())
            try:
                names |= {info[4][0].lower() for info in socket.getaddrinfo(name, None)}
            except OSError:
                pass
    return sorted(names)


def bind(root: str | Path, host: str = "127.0.0.1", port: int = 8050, allow_hosts=()):
    """The dashboard's server, bound (werkzeug's threaded server: one user, on loopback)
    and accepting only requests that name its address (:func:`bound_hosts`)."""
    from werkzeug.serving import make_server

    app = create_app(root)
    server = make_server(host, port, app, threaded=True)
    app.config[HOSTS] = frozenset(bound_hosts(host, allow_hosts))
    app.config[PORT] = server.server_port
    return server


def serve(root: str | Path, host: str = "127.0.0.1", port: int = 8050,
          ready: threading.Event | None = None, allow_hosts=()) -> None:
    """Serve until interrupted."""
    server = bind(root, host, port, allow_hosts)
    runs = server.app.extensions["asmevo_runs"]
    runs.warm(None)             # the first page finds the run read, or being read
    shown = f"[{host}]" if ":" in host else host
    print(f"asmevo serve: http://{shown}:{server.server_port}/  (read-only; Ctrl-C stops)",
          flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever()
    finally:
        runs.close()
