"""The dashboard's views against ``asmevo report``'s readers (asmevo.archive.queries), on a real
run grown with generated generations (bench_serve's rows: many evaluations, some
rejected) and a few LLM calls and agent tries; and what one request costs in memory."""
from __future__ import annotations

import json
import math
import sqlite3
import time
import tracemalloc

import numpy as np
import pytest

from asmevo.archive import queries
from asmevo.archive.store import Archive
from asmevo.serve import views
from asmevo.serve.snapshot import Snapshot
from experiments.bench_serve import generate

INDIVIDUALS = 1500


def _llm_rows(db) -> None:
    """Agent conversations on a few proposals (one improving), and a single-shot call."""
    conn = sqlite3.connect(db)
    rid, = conn.execute("SELECT run_id FROM runs").fetchone()
    picked = conn.execute(
        "SELECT p.generation, p.island, p.slot, p.operator, e.status FROM proposals p "
        "JOIN individuals i ON i.run_id = p.run_id AND i.ind_id = p.ind_id "
        "JOIN evaluations e ON e.eval_key = i.eval_key ORDER BY p.generation DESC LIMIT 6"
    ).fetchall()
    for n, (g, isl, slot, op, _status) in enumerate(picked):
        for turn in range(1 + n % 3):
            conn.execute("INSERT INTO llm_usage (run_id, generation, island, slot, operator,"
                         " call_id, model, tokens_in, tokens_out, cache_read_tokens,"
                         " cache_write_tokens, cost, created, turn) VALUES"
                         " (?,?,?,?,?,?,'m',?,?,0,0,?,0,?)",
                         (rid, g, isl, slot, op, f"c{n}-{turn}", 100 * n, 10 * turn,
                          0.01 * (n + 1), turn if n % 2 else None))
        conn.execute("INSERT INTO agent_tries (run_id, generation, island, slot, seq, operator,"
                     " parent, edit, status, reason, speedup, fresh) VALUES"
                     " (?,?,?,?,0,?,'k0','{}',?,'',?,1)",
                     (rid, g, isl, slot, op, "equal" if n % 2 else "mismatch", 1.0 + n / 10))
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    run_dir = generate(tmp_path_factory.mktemp("grown") / "run", INDIVIDUALS)
    _llm_rows(run_dir / "archive.db")
    snap = Snapshot(run_dir)
    archive = Archive(run_dir / "archive.db", readonly=True)
    yield snap.view(), archive
    archive.close()
    snap.close()


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        na = a is None or (isinstance(a, float) and math.isnan(a))
        nb = b is None or (isinstance(b, float) and math.isnan(b))
        return na and nb or not (na or nb) and math.isclose(a, b, rel_tol=1e-12)
    return a == b


def test_counts_best_and_islands_are_reports(grown):
    view, archive = grown
    df = queries.individuals(archive)
    s = views.summary(view)
    assert s["individuals"] == len(df) >= INDIVIDUALS
    assert s["evaluations"] == int(df["first"].sum())
    assert s["best"]["ind_id"] == queries.best_individual(archive)["ind_id"]
    now = time.time()
    for isl in s["islands"]:
        grp = df[df["island"] == isl["island"]]
        fresh = grp[grp["first"]]
        assert isl["evaluations"] == len(fresh)
        assert isl["accepted"] == int((fresh["status"] == "equal").sum())
        assert _same(isl["best"], grp.loc[grp["status"] == "equal", "fitness"].max())
        created = fresh["eval_created"].dropna()
        recent = created[created >= (created.max() if len(created) else now) - 300]
        span = recent.max() - recent.min() if len(recent) > 1 else 0
        assert _same(isl["evals_per_minute"], 60 * (len(recent) - 1) / span if span else None)
    assert sorted(i["island"] for i in s["islands"]) == sorted(df["island"].unique())


def test_curves_are_the_steps_of_reports_curve(grown):
    view, archive = grown
    full = queries.best_curve(archive, "island")
    got = {c["island"]: c for c in views.curves(view)["series"]}
    for island, g in full.groupby("island"):
        xs, ys = g["evaluations"].tolist(), g["best"].tolist()
        keep = [k for k in range(len(ys)) if k in (0, len(ys) - 1) or ys[k] != ys[k - 1]]
        assert got[island]["evaluations"] == [xs[k] for k in keep]
        assert got[island]["best"] == [ys[k] for k in keep]
        assert len(keep) < len(ys) / 4        # a step curve, not a point per individual


def test_operator_and_llm_tables_are_reports(grown):
    view, archive = grown
    ops = views.operators(view)
    want = queries.operator_stats(archive).to_dict(orient="records")
    assert len(ops["operators"]) == len(want) == 2
    for got, exp in zip(ops["operators"], want):
        assert got.keys() == exp.keys()
        assert all(_same(got[k], exp[k]) for k in exp), (got, exp)
    spend = queries.llm_spend(archive).to_dict(orient="records")
    assert [r["operator"] for r in ops["llm_spend"]] == [r["operator"] for r in spend]
    for got, exp in zip(ops["llm_spend"], spend):
        assert all(_same(got[k], exp[k]) for k in exp), (got, exp)
    assert any(r["improvements"] for r in spend)        # the fixture has one that improved
    conv = queries.conversations(archive).to_dict(orient="records")
    assert len(ops["conversations"]) == len(conv) > 0
    for got, exp in zip(ops["conversations"], conv):
        assert all(_same(got[k], exp[k]) for k in exp), (got, exp)


def test_pages_cover_every_individual_in_order(grown):
    view, archive = grown
    df = queries.individuals(archive)
    seen = []
    for order in views.ORDERS:
        offset, rows = 0, []
        while True:
            page = views.individuals(view, order, offset)
            assert len(page["rows"]) <= views.PAGE
            rows += page["rows"]
            offset += views.PAGE
            if offset >= page["total"]:
                break
        seen += [r["ind_id"] for r in rows]
        if order == "best":
            fits = [r["fitness"] for r in rows]
            assert fits == sorted(fits, reverse=True) and all(r["status"] == "equal" for r in rows)
        else:
            births = [(r["generation"], r["island"]) for r in rows]
            assert births == sorted(births, reverse=True)
    assert sorted(seen) == sorted(df["ind_id"])


def test_lineage_and_one_individual(grown):
    view, archive = grown
    lin = views.lineage(view)
    assert lin["root"] == queries.best_individual(archive)["ind_id"]
    assert len(lin["nodes"]) <= views.LINEAGE_NODES
    chain = queries.lineage(archive, lin["root"])["ind_id"].tolist()   # first parents
    assert set(chain) <= set(lin["nodes"]) or lin["truncated"]
    one = views.individual(view, lin["root"])
    assert one["verdict"]["status"] == "equal" and one["edits"]
    assert one["verdict"]["details"]["line_profile"]["ranges"]


def test_a_request_reads_a_page_not_the_archive(grown):
    """Once the run's digest is read, one request allocates a page's worth, however many
    individuals the archive holds; the digest itself is numbers only."""
    view, _ = grown
    d = view.digest
    held = sum(a.nbytes for a in (d.rowid, d.island, d.generation, d.status, d.fitness,
                                  d.fresh, d.created))
    assert held <= 60 * len(d)
    tracemalloc.start()
    try:
        for call in (lambda: views.summary(view), lambda: views.curves(view),
                     lambda: views.individuals(view, "best", 0),
                     lambda: views.individuals(view, "newest", 500), lambda: views.lineage(view)):
            tracemalloc.reset_peak()
            call()
            peak = tracemalloc.get_traced_memory()[1]
            assert peak < 2 << 20, peak          # the archive holds ~10 MB of rows
    finally:
        tracemalloc.stop()
    size = (view.archive.path).stat().st_size
    assert size > 5 << 20
    assert np.isfinite(d.fitness[d.equal]).all()


def test_a_conversation_is_its_calls_and_tries_in_order(grown):
    view, archive = grown
    conv = views.operators(view)["conversations"][0]
    got = views.conversation(view, conv["generation"], conv["island"], conv["slot"])
    conn = sqlite3.connect(archive.path)
    want = conn.execute("SELECT turn, cost FROM llm_usage WHERE generation = ? AND island = ? "
                        "AND slot = ? ORDER BY turn, id",
                        (conv["generation"], conv["island"], conv["slot"])).fetchall()
    tries = conn.execute("SELECT seq, status FROM agent_tries WHERE generation = ? AND "
                         "island = ? AND slot = ?",
                         (conv["generation"], conv["island"], conv["slot"])).fetchall()
    conn.close()
    assert [(c["turn"], c["cost"]) for c in got["calls"]] == want and len(want) == conv["turns"]
    assert math.isclose(got["cost"], sum(c for _, c in want))
    assert [(t["seq"], t["status"]) for t in got["tries"]] == tries
    assert got["tries"][0]["edit"] == {}          # the archived JSON as a value
    empty = views.conversation(view, 10 ** 6, 0, 0)
    assert empty["calls"] == [] and empty["tries"] == []


def test_the_best_and_an_individual_say_proved_or_tested(grown):
    from asmevo.verdict import coverage_label
    view, archive = grown
    best = queries.best_individual(archive)
    s = views.summary(view)
    assert s["best"]["coverage"] == coverage_label(best["details"])
    assert s["best"]["coverage"].split(" ")[0] in ("proved", "tested")
    one = views.individual(view, best["ind_id"])
    assert one["verdict"]["coverage"] == s["best"]["coverage"]
