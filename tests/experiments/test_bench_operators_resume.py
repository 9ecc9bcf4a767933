"""bench_operators --results: a rerun keeps finished kernels, and reruns one that an
earlier run's time budget cut short when the new run has no budget."""
from __future__ import annotations

import json
from pathlib import Path

from tests.experiments import load_bench

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load_bench('bench_operators')


def _keep(done: Path, kernel: str, setup: dict, rounds: int) -> None:
    done.mkdir(parents=True, exist_ok=True)
    res = {"kernel": kernel, "rounds": rounds, "stats": {"schedule": {"applications": rounds}},
           "reasons": {"schedule": {}}, "bad": [], "pool": 0}
    (done / f"{kernel}.json").write_text(json.dumps({"setup": setup, "result": res}))


def test_kept_results_resume_and_cut_ones_rerun_without_a_budget(tmp_path):
    b = _bench()
    setup = {"operators": ["schedule"], "applications": 200, "seed": 1, "size": "small",
             "target": "amdgpu", "check_size": None}
    _keep(tmp_path, "full", setup, 200)
    _keep(tmp_path, "cut", setup, 162)
    assert b._finished(tmp_path, "full", setup, full=True)["rounds"] == 200
    assert b._finished(tmp_path, "cut", setup, full=True) is None
    kept = b._finished(tmp_path, "cut", setup, full=False)        # a budgeted rerun keeps it
    assert kept["rounds"] == 162 and kept["stats"]["schedule"]["applications"] == 162
    assert b._finished(tmp_path, "full", dict(setup, seed=2)) is None   # another setup
    assert b._finished(tmp_path, "missing", setup) is None
