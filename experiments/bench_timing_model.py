"""Does the CDNA3 timing model rank the corpus like first principles do?

For every corpus kernel with an entry in ``MEDIUM`` this runs one launch at a
"medium" size (defined here as spec param overrides: big enough that launches
fill the GPU, small enough to emulate in seconds) and prints

* first principles: ``bytes / 5.3 TB/s + flops / peak`` (bytes = every spec
  buffer read or written once; flops from the per-kernel formula below; peak =
  81.7 TFLOP/s FP32 vector or 1307 TFLOP/s FP16/BF16 matrix, MI300X whitepaper),
* the model's **modeled** cycles and microseconds,
* emulation time alone vs. ``model_launch`` time (which includes its own
  traced emulation): ``model_overhead_ratio`` = sum(model) / sum(emulation).

It checks determinism (two cold runs give the same cycles) on a few kernels and
prints ``spearman=<value>``: rank correlation of modeled time with first
principles over GPU-sized launches whose sizes are spread systematically
(``--uniform``: all at the large size, where most kernels move ~134 MB and the
reference ranking is mostly ties broken by flop estimates).

Pairs (``experiments/timing_pairs/pairs.toml``): known-good and known-bad variants of
one kernel (coalesced vs strided loads, padded vs bank-conflicted LDS, pipelined vs
serial loads), each at its small and large size; ``pairs_ordered=<k>/<n>`` counts the
(pair, size) cases the model orders the way the hardware literature says.

Cost: ``seconds_per_timing_<kernel>_<size>=`` for softmax and tri_matmul_large, CPU
seconds of one cold ``model_launch`` (traced emulation + simulation; decoding warm).
Run: ``python experiments/bench_timing_model.py [--only a b] [--uniform] [--skip-pairs]``.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asmevo.timing import model as T  # noqa: E402
from asmevo.launch.spec import load_spec, make_inputs            # noqa: E402

KERNELS = ROOT / "experiments" / "kernels"
PAIRS = ROOT / "experiments" / "timing_pairs"
COST = ("softmax", "tri_matmul_large")
HBM = 5.3e12
PEAK = {"vector": 81.7e12, "matrix": 1307.4e12}

# kernel -> (medium params, flops(params), peak kind)
EW = 1 << 20
MEDIUM = {
    "vector_add": ({"N": EW}, lambda p: p["N"], "vector"),
    "vector_scale": ({"N": EW}, lambda p: p["N"], "vector"),
    "relu": ({"N": EW}, lambda p: p["N"], "vector"),
    "silu": ({"N": EW}, lambda p: 5 * p["N"], "vector"),
    "gelu_tanh": ({"N": EW}, lambda p: 12 * p["N"], "vector"),
    "tanh_act": ({"N": EW}, lambda p: 6 * p["N"], "vector"),
    "int_hash": ({"N": EW}, lambda p: 10 * p["N"], "vector"),
    "asm_copy": ({"N": EW}, lambda p: 0, "vector"),
    "asm_scale": ({"N": EW}, lambda p: p["N"], "vector"),
    "tri_add": ({"N": EW}, lambda p: p["N"], "vector"),
    "conv1d": ({"N": EW, "KW": 7}, lambda p: 2 * p["KW"] * (p["N"] - p["KW"] + 1), "vector"),
    "conv2d": ({"H": 512, "W": 512}, lambda p: 18 * (p["H"] - 2) * (p["W"] - 2), "vector"),
    "softmax": ({"ROWS": 1024, "COLS": 1024}, lambda p: 5 * p["ROWS"] * p["COLS"], "vector"),
    "log_softmax": ({"ROWS": 1024, "COLS": 1024}, lambda p: 5 * p["ROWS"] * p["COLS"],
                    "vector"),
    "layernorm": ({"ROWS": 1024, "COLS": 1024}, lambda p: 8 * p["ROWS"] * p["COLS"], "vector"),
    "rmsnorm": ({"ROWS": 1024, "COLS": 1024}, lambda p: 4 * p["ROWS"] * p["COLS"], "vector"),
    "argmax_rows": ({"ROWS": 1024, "COLS": 1024}, lambda p: p["ROWS"] * p["COLS"], "vector"),
    "mean_rows": ({"ROWS": 1024, "COLS": 1024}, lambda p: p["ROWS"] * p["COLS"], "vector"),
    "row_max": ({"ROWS": 1024, "COLS": 1024}, lambda p: p["ROWS"] * p["COLS"], "vector"),
    "reduce_sum": ({"ROWS": 512, "COLS": 4096}, lambda p: p["ROWS"] * p["COLS"], "vector"),
    "cross_entropy": ({"ROWS": 256, "COLS": 8000}, lambda p: 4 * p["ROWS"] * p["COLS"],
                      "vector"),
    "cumsum_rows": ({"ROWS": 4096}, lambda p: 8 * 256 * p["ROWS"], "vector"),
    "matmul_tiled": ({"M": 256, "N": 256, "K": 256}, lambda p: 2 * p["M"] * p["N"] * p["K"],
                     "vector"),
    "matvec": ({"M": 1024, "K": 2048}, lambda p: 2 * p["M"] * p["K"], "vector"),
    "transpose": ({"ROWS": 1024, "COLS": 1024}, lambda p: 0, "vector"),
    "tri_softmax": ({"ROWS": 4096, "COLS": 256}, lambda p: 5 * p["ROWS"] * p["COLS"], "vector"),
    "tri_layernorm": ({"ROWS": 4096, "COLS": 256}, lambda p: 8 * p["ROWS"] * p["COLS"],
                      "vector"),
    "tri_rmsnorm": ({"ROWS": 4096, "COLS": 256}, lambda p: 4 * p["ROWS"] * p["COLS"], "vector"),
    "tri_fused_add_rmsnorm": ({"ROWS": 512, "COLS": 4096},
                              lambda p: 6 * p["ROWS"] * p["COLS"], "vector"),
    "tri_quant_int8": ({"ROWS": 512, "COLS": 4096}, lambda p: 4 * p["ROWS"] * p["COLS"],
                       "vector"),
    "tri_dequant": ({"ROWS": 1024, "COLS": 4096}, lambda p: 2 * p["ROWS"] * p["COLS"], "vector"),
    "tri_rotary": ({"T": 1024, "H": 32, "MAX_POS": 4096}, lambda p: 3 * p["T"] * p["H"] * 128,
                   "vector"),
    "tri_silu_and_mul": ({"T": 512, "D": 4096}, lambda p: 6 * p["T"] * p["D"], "vector"),
    "tri_topk_gating": ({"T": 16384, "E": 64}, lambda p: 8 * p["T"] * p["E"], "vector"),
    "tri_decode_attention": ({"B": 8, "H": 32, "L": 512}, lambda p: 4 * p["B"] * p["H"] *
                             p["L"] * 64, "vector"),
    "tri_matmul_fp16": ({"M": 512, "N": 512, "K": 512}, lambda p: 2 * p["M"] * p["N"] * p["K"],
                        "matrix"),
    "tri_matmul_bf16": ({"M": 512, "N": 512, "K": 512}, lambda p: 2 * p["M"] * p["N"] * p["K"],
                        "matrix"),
    "tri_matmul_large": ({"M": 512, "N": 512, "K": 1536},
                         lambda p: 2 * p["M"] * p["N"] * p["K"], "matrix"),
}
DETERMINISM = ("softmax", "tri_matmul_fp16", "asm_copy")

# the ranking runs at the spec's "large" size (GPU-sized launches, hundreds of MB),
# except where that needs more than ~300 MB of buffers or minutes of emulation per CU:
# then these overrides (still thousands of workgroups or full-GPU grids)
RANKING = {
    "conv2d": {"H": 4096, "W": 4096},
    "cross_entropy": {"ROWS": 2048, "COLS": 16000},
    "matmul_tiled": {"M": 1024, "N": 1024, "K": 1024},
    "matvec": {"M": 8192, "K": 4096},
    "transpose": {"ROWS": 4096, "COLS": 4096},
    "tri_decode_attention": {"B": 32, "H": 32, "L": 512},
    "tri_dequant": {"ROWS": 8192, "COLS": 8192},
    "tri_fused_add_rmsnorm": {"ROWS": 4096, "COLS": 4096},
    "tri_matmul_bf16": {"M": 2048, "N": 2048, "K": 1024},
    "tri_matmul_fp16": {"M": 2048, "N": 2048, "K": 1024},
    "tri_matmul_large": {"M": 4096, "N": 4096, "K": 1536},
    "tri_rotary": {"T": 8192, "H": 32, "MAX_POS": 4096},
    "tri_silu_and_mul": {"T": 2048, "D": 14336},
}


LEADING = ("N", "ROWS", "M", "T", "B", "H")
SPREAD = (1, 2, 4, 8)      # kernel i (alphabetical) divides one dimension by SPREAD[i % 4]
# the dimension divided: one *inside* a workgroup where the grid would otherwise
# shrink below a full GPU (first principles assume a full GPU)
SPREAD_DIM = {
    "argmax_rows": "COLS", "cross_entropy": "COLS", "layernorm": "COLS",
    "log_softmax": "COLS", "mean_rows": "COLS", "reduce_sum": "COLS", "rmsnorm": "COLS",
    "row_max": "COLS", "softmax": "COLS", "matvec": "K", "matmul_tiled": "K",
    "tri_decode_attention": "L", "tri_dequant": "COLS", "tri_fused_add_rmsnorm": "COLS",
    "tri_layernorm": "COLS", "tri_rmsnorm": "COLS", "tri_softmax": "COLS",
    "tri_quant_int8": "COLS", "tri_silu_and_mul": "D", "tri_rotary": "H",
    "tri_matmul_bf16": "K", "tri_matmul_fp16": "K", "tri_matmul_large": "K",
}


MIN_WGS_PER_CU = 4     # --grid-first: "a full GPU" = at least 4 workgroups per CU


def _grid_size(name: str, params: dict) -> int:
    with tempfile.TemporaryDirectory(prefix="asmevo-grid-") as td:
        return int(np.prod(sized_spec(name, params, Path(td)).grid))


def ranking_params(name: str, index: int, spread: bool, grid_first: bool = False) -> dict | None:
    """The ranking size of kernel number ``index``: the large size (or its RANKING
    override), with the leading dimension divided by 1, 2, 4 or 8 in turn when
    ``spread`` -- a systematic spread of first-principles times, not a per-kernel
    choice; the divided dimension (SPREAD_DIM) keeps the grid filling the GPU."""
    params = RANKING.get(name)
    if not spread:
        return params
    if params is None:
        params = dict(load_spec(KERNELS / name / "spec.toml", "large").params)
    params = dict(params)
    lead = SPREAD_DIM.get(name) or next(k for k in LEADING if k in params)
    div = SPREAD[index % len(SPREAD)]
    if grid_first and name in SPREAD_DIM:
        # one rule for every kernel: divide the grid dimension; fall back to the
        # in-workgroup dimension only where that grid would have fewer than
        # MIN_WGS_PER_CU workgroups per CU (dividing an in-workgroup dimension changes
        # the work per workgroup, which kernels compiled for a fixed BLOCK do not shrink)
        grid_dim = next(k for k in LEADING if k in params)
        trial = dict(params)
        trial[grid_dim] = max(1, params[grid_dim] // div)
        if _grid_size(name, trial) >= MIN_WGS_PER_CU * T.load_params("gfx942").compute_units:
            return trial
    quantum = 64 if name == "tri_matmul_large" else 1       # K % 64 == 0
    params[lead] = max(quantum, params[lead] // div // quantum * quantum)
    return params


def sized_spec(name: str, params: dict | None, tmp: Path):
    """The spec with ``params`` as a size of its own (None: the spec's "large"), under a
    name no spec uses: 23 corpus specs have a ``medium`` of their own (bench_search's)."""
    if params is None:
        return load_spec(KERNELS / name / "spec.toml", "large")
    src = KERNELS / name / "spec.toml"
    text = src.read_text()
    co = re.search(r'^code_object\s*=\s*"([^"]+)"', text, re.M)
    text = text.replace(co.group(0), f'code_object = "{(src.parent / co.group(1)).resolve()}"')
    text += f"\n[sizes.{BENCH_SIZE}]\n" + "".join(f"{k} = {v}\n" for k, v in params.items())
    out = tmp / f"{name}.toml"
    out.write_text(text)
    return load_spec(out, BENCH_SIZE)


BENCH_SIZE = "bench_timing_model"


def spearman(a, b) -> float:
    def ranks(x):
        x = np.asarray(x, float)
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for v in np.unique(x):          # average ranks of ties
            m = x == v
            r[m] = r[m].mean()
        return r
    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def overhead(names: list[str], td: Path) -> list[tuple]:
    """Medium sizes: full functional emulation vs. model_launch, both with decoding warm."""
    rows = []
    print(f"{'kernel (medium)':24s} {'wgs':>7s} {'modeled cyc':>12s} {'emu s':>7s} "
          f"{'model s':>7s} {'ratio':>5s}")
    for name in names:
        params = MEDIUM[name][0]
        spec = sized_spec(name, params, td)
        values = make_inputs(spec)
        code = spec.code_object.read_bytes()
        T._CACHE.clear()
        T.model_launch(code, spec, make_inputs(spec, 1))    # warm: decode the code object once
        emu = T._emulator(code)
        t0 = time.perf_counter()
        res = emu.launch(spec, values)
        t_emu = time.perf_counter() - t0
        if not res.ok:
            print(f"{name:24s} emulation failed: {res.message}")
            continue
        T._CACHE.clear()
        t0 = time.perf_counter()
        m = T.model_launch(code, spec, values)
        t_model = time.perf_counter() - t0
        if name in DETERMINISM:
            T._CACHE.clear()
            again = T.model_launch(code, spec, values).cycles
            full = T.model_launch(code, spec, values, sample=False).cycles
            print(f"  determinism {name}: {m.cycles} == {again}; whole-launch emulation "
                  f"gives {full}")
            if again != m.cycles:
                raise SystemExit(f"{name}: NOT DETERMINISTIC")
        rows.append((name, t_emu, t_model))
        print(f"{name:24s} {m.workgroups:7d} {m.cycles:12d} {t_emu:7.2f} {t_model:7.2f} "
              f"{t_model / t_emu:5.2f}", flush=True)
    return rows


def ranking(names: list[str], td: Path, spread: bool, grid_first: bool = False) -> list[tuple]:
    """GPU-sized launches: first principles vs. modeled time."""
    rows = []
    print(f"{'kernel (ranking size)':24s} {'wgs':>7s} {'MB':>8s} {'GFLOP':>8s} "
          f"{'first-pr us':>11s} {'modeled cyc':>12s} {'modeled us':>10s} {'occ':>3s} "
          f"{'wgs/CU':>6s} {'s':>5s}")
    for i, name in enumerate(names):
        _, flops_of, kind = MEDIUM[name]
        t0 = time.perf_counter()
        spec = sized_spec(name, ranking_params(name, i, spread, grid_first), td)
        values = make_inputs(spec)
        nbytes = sum(a.nbytes for a in spec.buffers)
        flops = flops_of(spec.params)
        fp = nbytes / HBM + flops / PEAK[kind]
        m = T.model_launch(spec.code_object.read_bytes(), spec, values)
        del values
        rows.append((name, fp, m.seconds))
        print(f"{name:24s} {m.workgroups:7d} {nbytes / 1e6:8.1f} {flops / 1e9:8.2f} "
              f"{fp * 1e6:11.1f} {m.cycles:12d} {m.seconds * 1e6:10.1f} {m.occupancy:3d} "
              f"{m.cu_workgroups:6d} {time.perf_counter() - t0:5.1f}", flush=True)
    return rows


def pairs() -> tuple[int, int]:
    """Model every pair at its small and large size: (ordered as the literature says, all)."""
    import tomllib

    doc = tomllib.loads((PAIRS / "pairs.toml").read_text())
    good_n = total = 0
    print(f"{'pair':14s} {'size':6s} {'good variant':26s} {'modeled cyc':>11s} "
          f"{'bad variant':26s} {'modeled cyc':>11s} {'bad/good':>8s}")
    for pair in doc["pair"]:
        for size in ("small", "large"):
            cyc = []
            for variant in (pair["good"], pair["bad"]):
                spec = load_spec(PAIRS / variant / "spec.toml", size)
                cyc.append(T.model_launch(spec.code_object.read_bytes(), spec,
                                          make_inputs(spec)).cycles)
            ok = cyc[0] < cyc[1]
            good_n += ok
            total += 1
            print(f"{pair['name']:14s} {size:6s} {pair['good']:26s} {cyc[0]:11d} "
                  f"{pair['bad']:26s} {cyc[1]:11d} {cyc[1] / cyc[0]:8.2f}"
                  f"{'' if ok else '  MISORDERED'}", flush=True)
    return good_n, total


def cost() -> list[tuple[str, float]]:
    """CPU seconds of one cold model_launch (decoding warm) at the small and large sizes."""
    out = []
    for name in COST:
        for size in ("small", "large"):
            spec = load_spec(KERNELS / name / "spec.toml", size)
            values = make_inputs(spec)
            code = spec.code_object.read_bytes()
            T.model_launch(code, spec, make_inputs(spec, 1))       # decode once
            best = float("inf")
            for _ in range(2):
                T._CACHE.clear()
                t0 = time.process_time()
                T.model_launch(code, spec, values)
                best = min(best, time.process_time() - t0)
            out.append((f"{name}_{size}", best))
            print(f"model_launch {name:18s} {size:6s} {best:7.3f} CPU s", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="kernels to run")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-pairs", action="store_true")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--uniform", action="store_true",
                    help="rank at the large sizes only (no spread of sizes)")
    ap.add_argument("--in-workgroup", dest="grid_first", action="store_false",
                    help="spread sizes along the in-workgroup dimension where possible (the "
                         "earlier rule); the default divides the grid dimension wherever the "
                         f"grid keeps >= {MIN_WGS_PER_CU} workgroups per CU, so every kernel "
                         "keeps its per-workgroup work and only the amount of it changes")
    args = ap.parse_args()
    names = sorted(p.parent.name for p in KERNELS.glob("*/spec.toml"))
    skipped = [n for n in names if n not in MEDIUM]
    names = [n for n in names if n in MEDIUM and (not args.only or n in args.only)]
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="asmevo-bench-") as td:
        over = [] if args.skip_overhead else overhead(names, Path(td))
        print()
        ranked = ranking(names, Path(td), not args.uniform, args.grid_first)
    print()
    ordered = None if args.skip_pairs else pairs()
    print()
    costs = [] if args.skip_cost else cost()
    if skipped:
        print(f"skipped (no size / flop formula here): {', '.join(skipped)}")
    print(f"kernels={len(ranked)} wall={time.perf_counter() - t_all:.1f}s")
    if over:
        ratios = [r[2] / r[1] for r in over]
        print(f"per-kernel model/emulation ratio (medium sizes): median "
              f"{np.median(ratios):.2f}, max {max(ratios):.2f}")
        print(f"model_overhead_ratio={sum(r[2] for r in over) / sum(r[1] for r in over):.3f}")
    print(f"sizes: {'large (uniform)' if args.uniform else 'large / 1, 2, 4, 8 in turn (spread)'}"
          f"{' grid-first' if args.grid_first and not args.uniform else ''}")
    print(f"spearman={spearman([r[1] for r in ranked], [r[2] for r in ranked]):.3f}")
    for name, sec in costs:
        print(f"seconds_per_timing_{name}={sec:.3f}")
    if ordered is not None:
        print(f"pairs_ordered={ordered[0]}/{ordered[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
