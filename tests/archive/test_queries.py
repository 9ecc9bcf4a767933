"""Pandas readers over a real (small) run."""
from __future__ import annotations

import pytest

from asmevo.archive import queries
from asmevo.engine.command import open_engine
from asmevo.engine.report import PLOT_HINT, build_report
from asmevo.engine.rundir import create_run
from tests.conftest import HAS_MATPLOTLIB
from tests.engine.helpers import write_config


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("q")
    r = create_run(write_config(tmp / "c.toml", generations=4), tmp / "run")
    engine = open_engine(r)
    engine.run()
    yield r
    r.close()


def test_individuals_frame_in_birth_order(run):
    df = queries.individuals(run.archive)
    assert list(df.columns[:4]) == ["run_id", "ind_id", "island", "generation"]
    assert df["generation"].is_monotonic_increasing
    assert df.iloc[0]["ind_id"] == "k0" and df["status"].notna().all()
    ckpt = run.archive.last_checkpoint(run.run_id)[1]
    assert int(df["first"].sum()) == ckpt["spent"]["evaluations"]


def test_operator_stats_rates(run):
    st = queries.operator_stats(run.archive).set_index("operator")
    assert set(st.index) == {"nop_remove", "swap_adjacent"}
    assert (st["acceptance_rate"].between(0, 1)).all()
    assert (st["proposals"] == st["edits"] + st["no_proposal"]).all()
    view = {r["operator"]: r["proposals"] for r in run.archive.conn.execute(
        "SELECT * FROM operator_stats")}
    assert view == st["proposals"].to_dict()


def test_best_and_lineage(run):
    best = queries.best_individual(run.archive)
    lin = queries.lineage(run.archive, best["ind_id"])
    assert lin.iloc[0]["ind_id"] == "k0" and lin.iloc[-1]["ind_id"] == best["ind_id"]
    assert len(lin) == best["n_edits"] + 1
    per_kernel = queries.best_per_kernel(run.archive)
    assert per_kernel.iloc[0]["kernel"] == "asm_copy"
    assert per_kernel.iloc[0]["speedup"] == pytest.approx(best["fitness"])


def test_best_curves_are_monotone(run):
    for by in ("island", "operator"):
        curve = queries.best_curve(run.archive, by)
        for _, grp in curve.groupby(by):
            assert grp["best"].is_monotonic_increasing


def test_notebook_view(run):
    rows = run.archive.notebook("asm_copy", limit=5)
    assert 0 < len(rows) <= 5 and all(r["status"] for r in rows)
    assert rows[0]["generation"] >= rows[-1]["generation"]


def test_report_writes_tables_and_pngs(run, tmp_path):
    rep = build_report(run.archive, tmp_path / "rep")
    text = rep.render()
    assert "best per kernel" in text and "operators" in text and "lineage of the best" in text
    if not HAS_MATPLOTLIB:          # a machine without the plot extra: tables and the hint
        assert rep.plots == [] and PLOT_HINT in rep.notes
        assert not list((tmp_path / "rep").glob("*.png"))
        return
    assert {p.name for p in rep.plots} == {"best_by_island.png", "best_by_operator.png"}
    assert all(p.stat().st_size > 1000 and p.read_bytes()[:4] == b"\x89PNG" for p in rep.plots)
