"""headroom: the model's bounds on a real kernel, the bests parsed from a bench_search output."""
from __future__ import annotations

from pathlib import Path

from tests.experiments import load_bench

from asmevo.timing.model import model_launch

ROOT = Path(__file__).resolve().parents[2]
ODO = ROOT / "experiments" / "production" / "aiter_bwd_hd128_odo_fp16"


def test_bounds_of_a_bandwidth_bound_kernel_at_small():
    h = load_bench("headroom")
    data, spec, values = h._launch(ODO, "small")
    r = h.headroom(ODO, "small")
    # the same cycles model_launch gives (what bench_search reports as K0)
    assert r["k0"] == model_launch(data, spec, values).cycles
    terms = r["terms"]
    assert set(terms) >= {"hbm", "mfma", "valu", "ta", "lds", "wave"}
    assert terms["mfma"] == 0.0            # odo has no MFMA
    assert terms["valu"] > 0 and terms["ta"] > 0 and terms["hbm"] > 0
    # every bound is at most K0 (the model cannot beat its own resources) and includes
    # the launch overhead
    assert r["overhead"] < r["floor"] <= r["bound"] <= r["k0"]
    assert r["bound"] == r["overhead"] + max(terms.values())
    assert r["headroom"] == r["k0"] / r["bound"] >= 1.0
    # the stall shares split every stall cycle of the busiest CU once
    assert set(r["stalls"]) == {"vm", "lgkm", "barrier", "pipe", "other"}
    assert abs(sum(r["stalls"].values()) - 1.0) < 1e-9
    assert r["stalls"]["vm"] > 0.3        # odo streams dO and O from global memory


def test_best_speedups_parse_padded_names_and_keep_the_largest(tmp_path):
    h = load_bench("headroom")
    out = tmp_path / "bench.txt"
    out.write_text(
        "set production: 2 kernels\n"
        "liger_rope             seed 1  K0     22683 cyc  best     22683  speedup 1.0000x modeled\n"
        "aiter_bwd_hd128_odo_fp16 seed 1  K0     81750 cyc  best     64878  speedup 1.2601x m\n"
        "aiter_bwd_hd128_odo_fp16 seed 2  K0     81750 cyc  best     70000  speedup 1.1679x m\n"
        "geomean_speedup=1.0431\n")
    assert h.best_speedups(out) == {"liger_rope": 1.0, "aiter_bwd_hd128_odo_fp16": 1.2601}
    assert h.best_speedups(tmp_path / "missing.txt") == {}


def test_main_prints_the_table_and_summary(capsys, tmp_path):
    h = load_bench("headroom")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    line = "aiter_bwd_hd128_odo_fp16 seed 1  K0  81750 cyc  best  {} speedup {}x modeled\n"
    a.write_text(line.format(64878, "1.2601"))
    b.write_text(line.format(70000, "1.1679"))
    assert h.main(["--set", "production", "--kernels", "aiter_bwd_hd128_odo_fp16",
                   "--size", "small", "--results", str(b), str(a)]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.startswith("aiter_bwd_hd128_odo_fp16"))
    assert " 1.2601 " in row             # the larger of the two files' bests
    assert "a.txt" in out and "b.txt" in out
    assert "geomean_headroom=" in out and "kernels_with_headroom_over_1.10=" in out
    assert h.main(["--set", "/nonexistent/folder"]) == 2


def test_lds_dma_loads_are_timed_as_loads():
    h = load_bench("headroom")
    gemm = ROOT / "experiments" / "production" / \
        "aiter_bf16gemm_fp32bf16_tn_64x64_bshuffle_splitk"
    data, spec, values = h._launch(gemm, "small")
    trace, p, _ = h.modeled(data, spec, values)
    dma = [t for t in trace.texts if t.startswith("buffer_load_dword") and t.endswith(" lds")]
    assert len(dma) == 120
    # the model times them as loads (timing/access.py): none is a store
    assert h.dma_as_stores(trace, p) == 0
    assert h.headroom(ODO, "small")["dma_as_stores"] == 0


def test_every_round_simulates_the_whole_cu_and_meets_the_hbm_bound():
    """elu at large: 54 workgroups on the busiest CU; model_launch extrapolates after two
    rounds, bounded below by the CU's HBM backlog (it came out 15563 cycles, under its own
    HBM bound, before that bound), so it agrees with simulating them all."""
    h = load_bench("headroom")
    elu = ROOT / "experiments" / "kernels_naive" / "elu"
    data, spec, values = h._launch(elu, "large")
    sampled = h.headroom(elu, "large")
    full = h.headroom(elu, "large", every_round=True)
    assert sampled["k0"] == model_launch(data, spec, values).cycles
    assert full["cu_workgroups"] == sampled["cu_workgroups"] == 54
    assert abs(full["k0"] - sampled["k0"]) <= 0.02 * full["k0"]
    assert full["which"] == "hbm" and full["k0"] >= full["bound"]
    assert sampled["k0"] >= sampled["bound"]
