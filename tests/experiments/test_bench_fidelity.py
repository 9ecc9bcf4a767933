"""bench_fidelity: the fit and validate rows never overlap, and winner agreement ranks a
shape's alternatives by their modeled time (issue 41)."""
from __future__ import annotations

from pathlib import Path

from tests.experiments import load_bench

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load_bench('bench_fidelity')


def test_fit_rows_are_mi308x_gemms_and_every_mi300x_row_is_held_apart():
    b = _bench()
    rows = b.read_rows()
    fit = [r for r in rows if r["split"] == "fit"]
    val = [r for r in rows if r["split"] == "validate"]
    assert fit and val and not {r["row"] for r in fit} & {r["row"] for r in val}
    assert {r["cu_num"] for r in fit} == {"80"}
    assert {r["family"] for r in fit} <= set(b.FIT_FAMILIES)
    assert all(r["split"] == "validate" for r in rows if r["cu_num"] == "304")
    assert all(r["split"] == "validate" for r in rows if r["family"] == "fmoe_2stages")


def test_winner_agreement_counts_the_measured_winner_ranked_first(monkeypatch, capsys):
    b = _bench()
    rows = [{"row": 1, "kernel": "_kernel___A", "cu_num": "304"},
            {"row": 2, "kernel": "_kernel___B", "cu_num": "304"},
            {"row": 3, "kernel": "_kernel___C", "cu_num": "304"}]
    us = {(1, "_kernel___A"): 5.0, (1, "_kernel___B"): 7.0,      # the winner modeled fastest
          (2, "_kernel___A"): 5.0, (2, "_kernel___B"): 7.0,      # the winner modeled second
          (3, "_kernel___A"): None, (3, "_kernel___C"): 1.0}     # an alternative unmodeled
    monkeypatch.setattr(b, "alternatives", lambda r, aiter: [
        r | {"kernel": k} for (row, k) in us if row == r["row"]])

    def time_row(r, aiter):
        t = us[(r["row"], r["kernel"])]
        return dict(r) if t is None else r | {"modeled_us": t}

    monkeypatch.setattr(b, "time_row", time_row)
    got = b.winners(rows, Path("."))
    assert (got["agree"], got["shapes"], got["skipped"]) == (1, 2, 1)
    assert got["mean_rank"] == 1.5
