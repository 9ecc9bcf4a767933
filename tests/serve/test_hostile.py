"""The dashboard against what an attacker controls: the archive, the served folder, the
Host header and the URL. Every answer is a page, JSON or one error naming the file
(HTTP 4xx): never a 500, a traceback, a hang, or a read of a path the archive names."""
from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("flask", reason="the dashboard needs the serve extra (flask)")

from asmevo.serve import app as app_mod  # noqa: E402
from asmevo.serve.app import create_app  # noqa: E402
from tests.serve.crafted import MARK  # noqa: E402

ENDPOINTS = ("/api/summary", "/api/curves", "/api/operators", "/api/individuals",
             "/api/individuals?order=newest", "/api/lineage", "/api/token")


def within(seconds: float, fn):
    """``fn()`` in a thread; fails the test if it has not returned in time (a hang)."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"request still running after {seconds} s"
    return out["r"]


def texts(obj):
    """Every string in a JSON value, keys included."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from texts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from texts(v)


def shows(obj) -> bool:
    return any(MARK in t for t in texts(obj))


def answers(client, url: str, ok=(200, 409)):
    r = within(30, lambda: client.get(url))
    assert r.status_code in ok, (url, r.status_code, r.get_data(as_text=True)[:300])
    body = r.get_json()
    if r.status_code != 200:
        assert "\n" not in body["error"] and len(body["error"]) < 2500
    return r.status_code, body


def test_crafted_archives_are_served_as_data(crafted_root, capsys):
    root, a, b = crafted_root
    client = create_app(root).test_client()
    _, top = answers(client, "/api/root", ok=(200,))
    assert sorted(top["runs"]) == sorted([a.name, b.name])
    assert shows(top["ablation"]["tables"])          # as text, not stripped
    for name in (a.name, b.name):
        run = quote(name, safe="")
        for url in ENDPOINTS:
            code, body = answers(client, url + ("&" if "?" in url else "?") + "run=" + run)
            assert code == 200, (name, url, body)
        s = answers(client, f"/api/summary?run={run}")[1]
        assert MARK in s["name"] and MARK in s["timing"] and MARK in s["seed"]
        ids = [r["ind_id"] for r in answers(client, f"/api/individuals?run={run}")[1]["rows"]]
        assert ids and all(MARK in i for i in ids if i != "k0")
        for ind in ids[:3] + ["k0"]:
            code, one = answers(client, f"/api/individual/{quote(ind, safe='')}?run={run}")
            assert code == 200 and shows(one)
            code, diff = answers(client, f"/api/diff/{quote(ind, safe='')}?run={run}")
            if name == b.name:      # real kernel and windows: the listing renders
                assert code == 200 and diff["rows"], diff
            else:                  # a markup kernel or window: one error, as data
                assert code == 409
    assert "Traceback" not in capsys.readouterr().err


def _sql(run_dir: Path, *statements) -> None:
    conn = sqlite3.connect(run_dir / "archive.db")
    for s in statements:
        conn.execute(*s) if isinstance(s, tuple) else conn.execute(s)
    conn.commit()
    conn.close()


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("damage, endpoint", [
    ("UPDATE individuals SET island = 'north' WHERE ind_id != 'k0'", "/api/summary"),
    ("UPDATE individuals SET generation = x'00ff' WHERE ind_id != 'k0'", "/api/curves"),
    ("UPDATE individuals SET parents = 'not json' WHERE ind_id != 'k0'", "/api/operators"),
    (("UPDATE runs SET config_json = ?", (DEEP,)), "/api/summary"),
    (("UPDATE checkpoints SET state = ?", ('{"spent": ' + DEEP[:5000] + '}',)), "/api/summary"),
    (("UPDATE evaluations SET details = ?", (DEEP,)), "/api/individual/k0"),
    (("UPDATE individuals SET edits = ? WHERE ind_id = 'k0'", ("[" + "1," * 3_000_000 + "1]",)),
     "/api/individual/k0"),
    ("UPDATE proposals SET ind_id = 'nobody' WHERE outcome = 'edit'", "/api/operators"),
    ("UPDATE individuals SET ind_id = 'twin' WHERE ind_id != 'k0'", "/api/summary"),
], ids=["island-text", "generation-blob", "parents-not-json", "config-deep", "spent-deep",
        "details-deep", "edits-huge", "proposal-dangling", "ids-repeated"])
def test_values_of_the_wrong_shape_are_one_error(stepped_run, damage, endpoint, capsys):
    run_dir, engine = stepped_run
    engine.archive.close()
    if "'twin'" in str(damage):          # the primary key forbids it: remove it first
        conn = sqlite3.connect(run_dir / "archive.db")
        conn.execute("PRAGMA legacy_alter_table = ON")      # the views are not checked
        conn.execute("CREATE TABLE t AS SELECT * FROM individuals")
        conn.execute("DROP TABLE individuals")
        conn.execute("ALTER TABLE t RENAME TO individuals")
        conn.commit()
        conn.close()
    _sql(run_dir, damage)
    client = create_app(run_dir).test_client()
    code, body = answers(client, endpoint)
    assert code == 409 and str(run_dir / "archive.db") in body["error"], body
    for url in ENDPOINTS:        # the other panels: shown, or the same kind of error
        answers(client, url)
    assert "Traceback" not in capsys.readouterr().err


def _k0_blob(run_dir: Path) -> Path:
    conn = sqlite3.connect(run_dir / "archive.db")
    sha, = conn.execute("SELECT k0_sha256 FROM runs").fetchone()
    conn.close()
    return run_dir / "blobs" / sha[:2] / f"{sha}.co"


@pytest.mark.parametrize("swap", ["fifo", "dev-zero", "outside", "missing", "directory"])
def test_k0_blob_that_is_not_a_regular_file_inside_the_run(stepped_run, tmp_path, swap):
    run_dir, engine = stepped_run
    engine.archive.close()
    blob = _k0_blob(run_dir)
    data = blob.read_bytes()
    blob.unlink()
    if swap == "fifo":
        os.mkfifo(blob)
    elif swap == "dev-zero":
        blob.symlink_to("/dev/zero")
    elif swap == "outside":
        (tmp_path / "k0.co").write_bytes(data)      # the right bytes, outside the run
        blob.symlink_to(tmp_path / "k0.co")
    elif swap == "directory":
        blob.mkdir()
    client = create_app(run_dir).test_client()
    code, body = answers(client, "/api/diff/k0")
    assert code == 409
    want = {"fifo": "FIFO", "dev-zero": "leads out of the run directory",
            "outside": "leads out of the run directory", "missing": "asmevo resume",
            "directory": "directory"}[swap]
    assert want in body["error"], body


def test_paths_the_archive_names_are_never_read(stepped_run):
    """The config and spec paths of a crafted archive name /dev/zero and a FIFO: the
    listing still comes from the run's own copy of K0."""
    run_dir, engine = stepped_run
    engine.archive.close()
    fifo = run_dir.parent / "fifo"
    os.mkfifo(fifo)
    _sql(run_dir, ("UPDATE runs SET spec_path = ?, config_json = json_set(config_json,"
                   " '$.run.code_object', '/dev/zero', '$.run.spec', ?)", (str(fifo), str(fifo))))
    client = create_app(run_dir).test_client()
    code, diff = answers(client, "/api/diff/k0")
    assert code == 200 and diff["rows"]


@pytest.mark.parametrize("swap", ["fifo", "outside", "huge"])
def test_ablation_files_are_regular_files_inside_the_root(stepped_run, tmp_path, swap):
    run_dir, engine = stepped_run
    engine.archive.close()
    table = run_dir / "summary.csv"
    if swap == "fifo":
        os.mkfifo(table)
    elif swap == "outside":
        (tmp_path / "secret.csv").write_text("user,password\nroot,hunter2\n")
        table.symlink_to(tmp_path / "secret.csv")
    else:
        with open(table, "wb") as f:
            f.truncate(app_mod.TABLE_BYTES + 1)
    client = create_app(run_dir).test_client()
    code, body = answers(client, "/api/root")
    assert code == 409 and "summary.csv" in body["error"]
    assert "hunter2" not in body["error"]
    answers(client, "/api/summary", ok=(200,))      # the run itself is still served


def test_static_names_are_a_fixed_list(stepped_run):
    run_dir, _ = stepped_run
    client = create_app(run_dir).test_client()
    for name in ("dash%00board.js", "%00", "..%2fapp.py", "index.html", "dashboard.js%00.css",
                 "x" * 5000):
        r = client.get("/static/" + name)
        assert r.status_code == 404, name
    assert client.get("/static/dashboard.js").status_code == 200
    assert client.get("/static/dashboard.css").status_code == 200
    for url in ("/api/individual/%00", "/api/diff/%00", "/api/summary?run=%00",
                "/api/individuals?offset=%00", "/api/individuals?offset=-1",
                "/api/individuals?order=%3Cb%3E"):
        assert client.get(url).status_code in (400, 404, 409), url


def test_host_header_must_name_the_bound_address(stepped_run):
    run_dir, _ = stepped_run
    client = create_app(run_dir).test_client()          # loopback, any port
    for host in ("127.0.0.1:8050", "localhost:8050", "[::1]:8050", "LOCALHOST"):
        assert client.get("/api/root", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8050", "127.0.0.1.evil.example:8050",
                 "localhost.:8050", "127.0.0.2:8050", "x" * 300):
        r = client.get("/api/root", headers={"Host": host})
        assert r.status_code == 421 and "not an address of this dashboard" in \
            r.get_json()["error"], host
        assert client.get("/", headers={"Host": host}).status_code == 421
    lan = create_app(run_dir, hosts=app_mod.bound_hosts("10.1.2.3", ["box.lan"]), port=8050)
    c = lan.test_client()
    assert c.get("/api/root", headers={"Host": "10.1.2.3:8050"}).status_code == 200
    assert c.get("/api/root", headers={"Host": "box.lan:8050"}).status_code == 200
    assert c.get("/api/root", headers={"Host": "10.1.2.3:8051"}).status_code == 421
    assert c.get("/api/root", headers={"Host": "127.0.0.1:8050"}).status_code == 421
    everywhere = app_mod.bound_hosts("0.0.0.0")
    assert socket.gethostname().lower() in everywhere and "127.0.0.1" in everywhere


def test_a_real_server_refuses_a_rebound_name(stepped_run):
    """Through a socket, as a browser's DNS-rebound request arrives: Host names the
    attacker's domain, the connection goes to 127.0.0.1."""
    run_dir, _ = stepped_run
    server = app_mod.bind(run_dir, port=0)
    port = server.server_port
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def get(host: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/root", headers={"Host": host})
        status = conn.getresponse().status
        conn.close()
        return status
    assert get(f"127.0.0.1:{port}") == 200
    assert get(f"localhost:{port}") == 200
    assert get(f"attacker.example:{port}") == 421
    assert get("127.0.0.1:1") == 421            # another port: another origin
    server.shutdown()


def test_the_page_script_inserts_no_html():
    """Escaping by construction: the script builds elements and text nodes only."""
    js = (Path(app_mod.__file__).with_name("static") / "dashboard.js").read_text()
    code = "\n".join(line for line in js.splitlines() if not line.lstrip().startswith("//"))
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                 "createContextualFragment", "DOMParser", "srcdoc", "eval(", "Function("):
        assert sink not in code, sink


@pytest.mark.parametrize("swap", ["db-fifo", "wal-fifo", "db-to-dev-zero"])
def test_archive_files_that_are_not_regular(stepped_run, swap):
    """The archive itself, or its WAL, replaced by a FIFO or a link to a device: an error
    naming it, at once (an SQLite open would block on the FIFO or read the device)."""
    run_dir, engine = stepped_run
    engine.archive.close()
    db = run_dir / "archive.db"
    target = db if swap.startswith("db") else db.with_name("archive.db-wal")
    target.unlink(missing_ok=True)
    if swap.endswith("fifo"):
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    client = create_app(run_dir).test_client()
    code, body = answers(client, "/api/summary")
    assert code == 409 and target.name in body["error"], body
