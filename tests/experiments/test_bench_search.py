"""bench_search: windows followed through edits, bad input, one real kernel end to end."""
from __future__ import annotations

import json
from pathlib import Path

from tests.experiments import load_bench

from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "experiments" / "kernels_naive" / "matmul" / "matmul.gfx942.co"


def _bench():
    return load_bench('bench_search')


def test_regions_follow_edits_through_the_program():
    b = _bench()
    prog = recover(load(MATMUL.read_bytes()))
    blocks = prog.function("matmul").blocks()
    base = b.regions(prog, (), "matmul")
    assert [(r[0], r[1]) for r in base] == [(x.start, x.end) for x in blocks]
    assert all(r[:2] == r[2:4] for r in base)
    loop = next(x for x in blocks if x.end - x.start > 6 and x.label)
    grow = Edit("matmul", loop.start + 1, loop.start + 3, ("s_nop 0",) * 5, "t")
    regs = {r[4]: r for r in b.regions(prog, (grow,), "matmul")}
    r = regs[loop.label]
    assert (r[0], r[1], r[2], r[3]) == (loop.start, loop.end, loop.start, loop.end + 3)
    later = [x for x in b.regions(prog, (grow,), "matmul") if x[0] >= loop.end]
    assert all(x[2] == x[0] + 3 for x in later)
    # an edit across two blocks merges them into one region
    nxt = next(x for x in blocks if x.start == loop.end)
    span = Edit("matmul", loop.end - 1, nxt.start + 1, ("s_nop 0",), "t")
    merged = [x for x in b.regions(prog, (span,), "matmul") if x[0] == loop.start][0]
    assert (merged[1], merged[3]) == (nxt.end, nxt.end - 1)
    assert merged[4] == f"{loop.label}..{nxt.label or f'@{nxt.start}'}"


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    b = _bench()
    assert b.main(["--set", str(tmp_path / "nowhere")]) == 2
    assert b.main(["--set", str(tmp_path)]) == 2                      # no specs in it
    assert b.main(["--set", "naive", "--operators", "no_such_op=1"]) == 2
    assert b.main(["--set", "naive", "--kernels", "no_such_kernel"]) == 2
    assert b.main(["--set", "naive", "--operators", "window_crossover=1"]) == 2
    # a timing size too large to emulate in full: refused before any search runs
    assert b.main(["--set", "corpus", "--kernels", "conv2d", "--evaluations", "3",
                   "--search-timing-size", "large", "--results", str(tmp_path / "r")]) == 2
    # a spec whose sizes are not a table: refused before any search, naming the file
    (tmp_path / "bad" / "k").mkdir(parents=True)
    (tmp_path / "bad" / "k" / "spec.toml").write_text('name = "x"\nsizes = "medium"\n')
    assert b.main(["--set", str(tmp_path / "bad"), "--search-timing-size", "medium"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "spec.toml: sizes: must be a table" in err.pop()
    assert len(err) == 6 and all(line.startswith("bench_search: ") for line in err)
    assert err[-1].startswith("bench_search: conv2d: ") and "ASMEVO_EMU_MAX_WAVES" in err[-1]
    assert not list((tmp_path / "r").glob("*.json"))


def test_one_kernel_end_to_end_and_resume(tmp_path, capsys):
    b = _bench()
    argv = ["--set", "naive", "--kernels", "leaky_relu", "--evaluations", "3",
            "--operators", "schedule=1", "--results", str(tmp_path)]
    assert b.main(argv) == 0
    out = capsys.readouterr().out
    lines = dict(line.split("=", 1) for line in out.splitlines()
                 if "=" in line and " " not in line)
    assert lines["speedup_label"] == "modeled" and lines["kernels_improved"].endswith("/1")
    assert float(lines["geomean_speedup"]) == float(lines["max_speedup"]) > 0
    doc = json.loads((tmp_path / "leaky_relu.json").read_text())
    seed = doc["result"]["seeds"][0]
    assert seed["large"]["equal"] and seed["large"]["k0_cycles"] > 0
    assert 1 <= seed["evaluations"] <= 3 + 2 * 8       # overrun by one generation at most
    assert b.main(argv) == 0                                          # kept: not searched again
    again = capsys.readouterr().out
    assert f"geomean_speedup={lines['geomean_speedup']}" in again
    # a search cut off before its kernel's result was kept resumes from its archive
    (tmp_path / "leaky_relu.json").unlink()
    assert b.main(argv) == 0
    resumed = capsys.readouterr().out
    assert f"geomean_speedup={lines['geomean_speedup']}" in resumed


def test_finalists_are_the_fittest_distinct_equal_candidates():
    import pandas as pd
    b = _bench()
    inds = pd.DataFrame([
        {"status": "equal", "fitness": 1.0, "eval_key": "k0", "edits": "[]"},
        {"status": "equal", "fitness": 1.3, "eval_key": "a", "edits": '["a"]'},
        {"status": "different", "fitness": 9.0, "eval_key": "w", "edits": '["w"]'},
        {"status": "equal", "fitness": 1.3, "eval_key": "a", "edits": '["a"]'},   # a copy
        {"status": "equal", "fitness": 1.3, "eval_key": "b", "edits": '["b"]'},   # born later
        {"status": "equal", "fitness": 1.1, "eval_key": "c", "edits": '["c"]'},
    ])
    got = b.finalists(inds, 3)
    assert [f["edits"] for f in got] == [["a"], ["b"], ["c"]]
    assert [f["search_speedup"] for f in got] == [1.3, 1.3, 1.1]
    assert len(b.finalists(inds, 10)) == 4


def test_the_search_times_at_medium_only_where_the_spec_has_it():
    b = _bench()
    args = b.argparse.Namespace(size="small", search_timing_size="medium")
    kernels = ROOT / "experiments" / "kernels"
    assert b.search_timing_size(kernels / "matvec", args) == "medium"
    assert b.search_timing_size(kernels / "vector_add", args) == "small"
    args.search_timing_size = None
    assert b.search_timing_size(kernels / "matvec", args) == "small"


def test_the_fastest_finalist_at_large_is_kept_and_k0_when_none_is_faster(monkeypatch):
    b = _bench()
    timed = {"a": 1000, "b": 800, "c": 1200}

    def retime(kernel_dir, edits, args):
        if edits == ["bad"]:
            return {"equal": False, "k0_cycles": 1000, "best_cycles": None, "windows": [],
                    "verdict": "different: y[3]"}
        cyc = timed[edits[0]] if edits else 1000
        return {"equal": True, "k0_cycles": 1000, "best_cycles": cyc, "windows": [],
                "verdict": "equal"}

    monkeypatch.setattr(b, "retime", retime)
    fin = [{"edits": [e], "search_speedup": s} for e, s in
           (("a", 1.5), ("bad", 1.4), ("b", 1.2), ("c", 1.1))]
    got = b.choose(Path("k"), {"finalists": fin}, None)
    assert got["speedup"] == 1000 / 800 and got["rank"] == 2 and got["edits"] == ["b"]
    assert got["search_speedup"] == 1.2
    assert got["rejected"] == [{"rank": 1, "verdict": "different: y[3]"}]
    slower = [{"edits": ["c"], "search_speedup": 1.3}, {"edits": ["a"], "search_speedup": 1.1}]
    got = b.choose(Path("k"), {"finalists": slower}, None)
    assert got["speedup"] == 1.0 and got["rank"] is None and got["edits"] == []
    assert got["large"]["best_cycles"] == got["large"]["k0_cycles"] == 1000
    got = b.choose(Path("k"), {"finalists": []}, None)
    assert got["speedup"] == 1.0 and got["rank"] is None


def test_a_kernel_counts_as_improved_only_when_its_band_is_above_one():
    b = _bench()

    def res(speedup, band):
        return {"seeds": [{"speedup": speedup, "large": {"band": band}}]}

    assert b.robust(res(1.2, (1.05, 1.3)), 0.0)
    assert not b.robust(res(1.2, (0.97, 1.3)), 0.0)       # an artifact of one parameter set
    assert not b.robust(res(1.0, None), 0.0)               # K0 kept
    assert b.robust(res(1.1, None), 0.0)                   # no calibration to draw a band from
    assert "ARTIFACT" in b.band_text((0.97, 1.3)) and "ARTIFACT" not in b.band_text((1.01, 1.3))
    assert b.band_text(None) == ""
