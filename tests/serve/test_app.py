"""The dashboard's JSON endpoints on a real run, through Flask's test client."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="the dashboard needs the serve extra (flask)")

from asmevo.serve.app import create_app  # noqa: E402


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (WAL and shm included) by content."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def get(client, url):
    r = client.get(url)
    assert r.status_code == 200, (url, r.status_code, r.get_data(as_text=True)[:300])
    return r.get_json()


def test_every_endpoint_on_a_live_run(stepped_run):
    run_dir, engine = stepped_run
    client = create_app(run_dir).test_client()
    root = get(client, "/api/root")
    assert root["runs"] == ["."] and root["ablation"] is None
    s = get(client, "/api/summary")
    assert s["generation"] == 1 and s["status"] == "running"
    assert [i["island"] for i in s["islands"]] == [0, 1]
    assert s["evaluations"] == sum(i["evaluations"] for i in s["islands"]) > 0
    curves = get(client, "/api/curves")["series"]
    assert len(curves) == 2 and all(len(c["evaluations"]) == len(c["best"]) > 0 for c in curves)
    ops = get(client, "/api/operators")["operators"]
    assert {o["operator"] for o in ops} == {"nop_remove", "swap_adjacent"}
    assert sum(o["proposals"] for o in ops) > 0
    page = get(client, "/api/individuals")
    rejected = get(client, "/api/individuals?order=newest")
    inds = page["rows"] + rejected["rows"]
    assert page["total"] == len(page["rows"]) > 0 and all(i["status"] == "equal" for i in page["rows"])
    assert all(i["status"] != "equal" for i in rejected["rows"])

    best = s["best"]["ind_id"]
    lin = get(client, "/api/lineage")
    assert lin["root"] == best and "k0" in lin["nodes"]
    # every node's parents are in the tree, down to K0
    assert all(p in lin["nodes"] for n in lin["nodes"].values() for p in n["parents"])

    edited = next(i["ind_id"] for i in inds if i["n_edits"] > 0)
    d = get(client, f"/api/diff/{edited}")
    assert d["kernel"] == "asm_copy" and d["changed_rows"] > 0
    assert d["abi"]["name"] == "asm_copy"
    k0 = get(client, "/api/diff/k0")
    assert k0["changed_rows"] == 0 and all(r[2] == r[5] for r in k0["rows"])
    one = get(client, f"/api/individual/{edited}")
    assert one["verdict"]["status"] and one["edits"]

    # a new generation shows: the token moves and the summary follows
    token = get(client, "/api/token")["token"]
    engine.step()
    assert get(client, "/api/token")["token"] != token
    assert get(client, "/api/summary")["generation"] == 2


def test_serving_changes_no_byte(stepped_run):
    run_dir, engine = stepped_run
    engine.archive.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    before = tree_digest(run_dir)
    client = create_app(run_dir).test_client()
    s = get(client, "/api/summary")
    for url in ("/api/curves", "/api/operators", "/api/individuals", "/api/lineage",
                f"/api/diff/{s['best']['ind_id']}", "/api/token", "/api/root"):
        get(client, url)
    assert tree_digest(run_dir) == before


def test_closed_run_is_served_without_creating_files(stepped_run):
    run_dir, engine = stepped_run
    engine.archive.close()           # a finished run: WAL checkpointed and removed
    before = tree_digest(run_dir)
    assert not (run_dir / "archive.db-wal").exists()
    client = create_app(run_dir).test_client()
    assert get(client, "/api/summary")["generation"] == 1
    assert tree_digest(run_dir) == before


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated"])
def test_damaged_archive_is_an_error_not_a_crash(tmp_path, stepped_run, damage):
    run_dir, engine = stepped_run
    engine.archive.close()
    db = run_dir / "archive.db"
    data = db.read_bytes()
    db.write_bytes({"garbage": b"\x00garbage" * 600, "empty": b"",
                    "truncated": data[:len(data) // 3]}[damage])
    before = tree_digest(run_dir)
    client = create_app(run_dir).test_client()
    r = client.get("/api/summary")
    assert r.status_code == 409
    err = r.get_json()["error"]
    assert str(db) in err and "\n" not in err
    assert client.get("/").status_code == 200      # the page itself still loads
    assert tree_digest(run_dir) == before


def test_unknown_or_escaping_run_names_are_404(stepped_run):
    run_dir, _ = stepped_run
    client = create_app(run_dir).test_client()
    for name in ("../", "..", "/etc", "nope", "blobs"):
        r = client.get("/api/summary", query_string={"run": name})
        assert r.status_code == 404, name
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/api/individual/nope").status_code == 409


def test_folder_of_runs_and_an_ablation_directory(tmp_path, stepped_run):
    run_dir, engine = stepped_run
    engine.archive.close()
    folder = tmp_path / "ablation"
    (folder / "cells" / "a" / "asm_copy").mkdir(parents=True)
    import shutil
    shutil.copytree(run_dir, folder / "cells" / "a" / "asm_copy" / "seed7")
    shutil.copytree(run_dir, folder / "cells" / "b")
    (folder / "summary.csv").write_text("set,geomean\na,1.01\nb,1.0\n")
    (folder / "kernels.csv").write_text("kernel,best\nasm_copy,1.01\n")
    client = create_app(folder).test_client()
    root = get(client, "/api/root")
    assert root["runs"] == ["cells/a/asm_copy/seed7", "cells/b"]
    assert root["ablation"]["tables"]["summary"] == [{"set": "a", "geomean": "1.01"},
                                                     {"set": "b", "geomean": "1.0"}]
    s = get(client, "/api/summary?run=cells/b")
    assert s["kernel"] == "asm_copy"
    assert client.get("/api/ablation/plot.png").status_code == 404    # none was written


def test_non_finite_numbers_are_sent_as_text_a_browser_parses(verified_run):
    """Python's json writes NaN as a bare token no browser's JSON.parse reads."""
    import json

    from tests.serve.conftest import reject_one

    run_dir, engine = verified_run
    engine.archive.close()
    rejected = reject_one(run_dir)
    client = create_app(run_dir).test_client()
    r = client.get(f"/api/individual/{rejected}")
    assert r.status_code == 200
    body = r.get_data(as_text=True)

    def strict(token):
        raise ValueError(f"not JSON: {token}")
    one = json.loads(body, parse_constant=strict)      # what JSON.parse accepts
    fm = one["verdict"]["details"]["first_mismatch"]
    assert fm["got"] == "NaN" and fm["max_abs_error"] == "Infinity" and fm["expected"] == 1.5
    assert one["verdict"]["status"] == "mismatch"


def test_operators_say_why_they_proposed_nothing_as_report_does(stepped_run):
    from asmevo.archive.store import Archive
    from asmevo.engine.report import refusals_table

    run_dir, engine = stepped_run
    got = get(create_app(run_dir).test_client(), "/api/operators")["refusals"]
    assert got and all(r["without_edit"] == sum(x["count"] for x in r["reasons"])
                       or len(r["reasons"]) == 3 for r in got)
    engine.archive.close()
    arch = Archive(run_dir / "archive.db", readonly=True)
    try:
        table = refusals_table(arch, 1)
    finally:
        arch.close()
    # the same operators, counts and reasons as the report's table
    assert set(table["operator"]) - {""} == {r["operator"] for r in got}
    assert list(table["count"]) == [x["count"] for r in got for x in r["reasons"]]
    # numbers standing alone are blanked, names kept: "no independent neighbours found in
    # N tries" once, not once per number of tries
    reasons = [x["reason"] for r in got for x in r["reasons"]]
    assert len(reasons) == len(set(reasons))
