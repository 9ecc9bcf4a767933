"""bench_operators --results: a rerun keeps finished kernels, and reruns one that an
earlier run's time budget cut short when the new run has no budget."""
from __future__ import annotations

import json
from collections import Counter
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


def test_streams_split_rounds_evenly_and_merge_per_kernel():
    b = _bench()
    assert b.stream_rounds(200, 4) == [50, 50, 50, 50]
    assert b.stream_rounds(10, 4) == [3, 3, 2, 2]
    assert b.stream_rounds(3, 8) == [1, 1, 1]          # never an empty stream
    assert sum(b.stream_rounds(197, 6)) == 197

    def part(kernel, rounds, rejected):
        return {"kernel": kernel, "rounds": rounds, "pool": 1,
                "stats": {"licm": {"applications": rounds, "equal": rounds - rejected}},
                "reasons": {"licm": {"no loop": 2}}, "bad": [{"kernel": kernel}] * rejected}
    merged = b.merge_streams([part("a", 50, 0), part("b", 100, 1), part("a", 50, 2)], ["licm"])
    assert [m["kernel"] for m in merged] == ["a", "b"]
    a = merged[0]
    assert a["rounds"] == 100 and a["pool"] == 2 and len(a["bad"]) == 2
    assert a["stats"]["licm"]["applications"] == 100 and a["stats"]["licm"]["equal"] == 98
    assert a["reasons"]["licm"]["no loop"] == 4


def test_streams_run_end_to_end_and_resume_by_part(tmp_path, capsys):
    """Two streams of one kernel: each part kept on its own, the summary adds them up,
    and a rerun resumes both parts."""
    b = _bench()
    argv = ["--kernels", "vector_add", "--operators", "schedule,waitcnt_relax", "--applications", "3",
            "--streams", "2", "--jobs", "1", "--budget", "0", "--results", str(tmp_path)]
    assert b.main(argv) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["vector_add.0.json",
                                                              "vector_add.1.json"]
    assert "effective N per kernel: vector_add=3" in out
    assert "candidates judged" in out
    assert (tmp_path / ".verdicts").is_dir()
    assert out.rstrip().endswith("rejected_sound=0")
    assert b.main(argv) == 0
    assert "resumed: 2 parts already done" in capsys.readouterr().out


def test_streams_without_results_leave_no_verdict_folder(tmp_path, monkeypatch, capsys):
    """Without --results the streams share verdicts through a temporary folder that the
    run removes at its end."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    b = _bench()
    assert b.main(["--kernels", "vector_add", "--operators", "schedule", "--applications", "2",
                   "--streams", "2", "--jobs", "1", "--budget", "0"]) == 0
    assert "candidates judged" in capsys.readouterr().out
    assert not list(tmp_path.glob("bench-verdicts-*"))


def test_every_rejection_is_counted_by_kernel_operator_and_status(tmp_path, monkeypatch, capsys):
    """Past the first 20 rejections (shown with their edits) each is still counted by
    kernel, operator and status: the NVIDIA run of 2026-12-08 printed 20 of its 242 and
    the kernels of its 8 faults were not known."""
    b = _bench()

    def fake(kernel, operators, applications, *a, **k):
        bad = [{"kernel": kernel, "operator": "schedule", "status": s,
                "edits": [{"note": f"edit {i}", "operator": "schedule"}]}
               for i, s in enumerate(["fault"] * 3 + ["nondeterministic"] * 25)]
        stats = {o: Counter(applications=applications) for o in operators}
        reasons = {o: Counter() for o in operators}
        return {"kernel": kernel, "rounds": applications, "stats": stats, "reasons": reasons,
                "bad": bad, "pool": 0}
    monkeypatch.setattr(b, "soundness_kernel", fake)
    assert b.main(["--kernels", "vector_add", "--operators", "schedule", "--applications", "2",
                   "--jobs", "1", "--budget", "0"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("rejections by kernel:"):].splitlines()[1:3]
    assert [ln.split() for ln in table] == [["vector_add", "schedule", "fault", "3"],
                                            ["vector_add", "schedule", "nondeterministic", "25"]]
    assert out.count("REJECTED ") == 20          # the first 20, with their edits
