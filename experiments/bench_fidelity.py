"""Modeled against measured: the timing model on AITer's measured MI300X / MI308X rows.

    python experiments/bench_fidelity.py --aiter AITER_CHECKOUT [--split validate] [--jobs 2]
    python experiments/bench_fidelity.py --aiter AITER_CHECKOUT --split fit --every 4
    python experiments/bench_fidelity.py --aiter AITER_CHECKOUT --split validate --winners

Rows: ``experiments/fidelity/aiter_rows.csv`` (``extract_aiter.py``: AITer's tuned tables,
each row a measured ``us`` of an AITer asm kernel whose ``.co`` is in the checkout). Each
row is emulated at its shape (``experiments/fidelity/families.py`` builds the launch AITer
makes) and timed by the model on the row's device (``cu_num`` 80: MI308X, 304: MI300X),
sampling as the model does. The split (:func:`split_of`): parameters are fitted on the
``fit`` rows (MI308X, the GEMM families) and judged on the ``validate`` rows (every MI300X
row, and the fused-MoE family on both parts), never the same rows.

Printed per row: modeled and measured microseconds; then per family and over all rows
``spearman=`` (rank correlation of modeled with measured time) and ``median_ape=`` (median
absolute percentage error), and with ``--winners`` ``winner_agreement=``: AITer's tables
list one kernel per shape (the tuner's winner among the family's tile variants), so the
model times the shape with each variant the launcher accepts and the figure is how often
its fastest is the measured winner. Times are **modeled** (the CDNA3 timing model) against
**measured** (AITer's tuner on the GPU of the row).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from bench_timing_model import spearman                             # noqa: E402
from fidelity import families as F                                  # noqa: E402

ROWS = ROOT / "experiments" / "fidelity" / "aiter_rows.csv"
DEVICES = {"80": "mi308x", "304": "mi300x"}
HELD_OUT_FAMILIES = ("fmoe_2stages",)       # judged on both parts, never fitted
FIT_FAMILIES = ("i8gemm", "fp8gemm_blockscale")


def split_of(row: dict) -> str:
    """``fit`` (MI308X rows of the GEMM families) or ``validate`` (the rest)."""
    if row["cu_num"] == "304" or row["family"] in HELD_OUT_FAMILIES:
        return "validate"
    return "fit" if row["family"] in FIT_FAMILIES else "other"


def read_rows(path: Path = ROWS) -> list[dict]:
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for i, r in enumerate(rows):
        r["row"] = i
        r["split"] = split_of(r)
    return rows


def median_ape(model, measured) -> float:
    m, t = np.asarray(model, float), np.asarray(measured, float)
    return float(np.median(np.abs(m - t) / t)) if len(t) else float("nan")


# --- one row -------------------------------------------------------------------------------

def launch_of(row: dict, aiter: Path, td: Path):
    """(spec, values, memset bytes) of ``row``'s launch."""
    from asmevo.launch.spec import load_spec

    rl = F.build(row, aiter)
    path = td / f"row{row['row']}_{abs(hash(row['kernel'])) % 10**8}.toml"
    path.write_text(rl.toml)
    return load_spec(path), rl.values, rl.memset_bytes


def memset_seconds(nbytes: int, p) -> float:
    """The split-K zeroing of C AITer's launcher does first (``hipMemsetAsync``): a launch
    of its own, writing ``nbytes`` at the device's achievable HBM bandwidth."""
    if not nbytes:
        return 0.0
    return (p.launch_overhead_cycles + nbytes / (p.hbm_bytes_per_cycle * p.hbm_efficiency)) \
        / p.clock_hz


def time_row(row: dict, aiter: Path, params_list=None) -> dict:
    """Modeled microseconds of ``row`` (under each of ``params_list``, or the device's
    table), with what it cost to compute."""
    from asmevo.timing import model as T
    from asmevo.timing.parameters import load_params

    device = DEVICES[row["cu_num"]]
    out = {"row": row["row"], "family": row["family"], "cu_num": row["cu_num"],
           "kernel": row["kernel"], "measured_us": float(row["us"]), "split": row["split"]}
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="fidelity-") as td:
            spec, values, memset = launch_of(row, aiter, Path(td))
            code = spec.code_object.read_bytes()
            plist = params_list or [load_params("gfx942", device)]
            got = []
            for p in plist:
                m = T.model_launch(code, spec, values, device=device, params=p)
                got.append(m.seconds + memset_seconds(memset, p))
            out.update(modeled_us=got[0] * 1e6, ensemble_us=[g * 1e6 for g in got],
                       grid=list(spec.grid), cu_workgroups=m.cu_workgroups,
                       simulated=m.simulated_workgroups, steady=m.steady, occupancy=m.occupancy,
                       memset_bytes=memset)
    except F.Unmodeled as exc:
        out["unmodeled"] = str(exc)
    except Exception as exc:   # noqa: BLE001 - a row the emulator refuses is reported
        out["unmodeled"] = f"{type(exc).__name__}: {exc}"[:300]
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["table"] = table_sha()
    return out


# --- the report ----------------------------------------------------------------------------

def summarize(results: list[dict], label: str) -> dict:
    ok = [r for r in results if "modeled_us" in r]
    if not ok:
        return {"rows": 0}
    mod = [r["modeled_us"] for r in ok]
    mea = [r["measured_us"] for r in ok]
    ratio = np.asarray(mod) / np.asarray(mea)
    return {"label": label, "rows": len(ok), "unmodeled": len(results) - len(ok),
            "spearman": spearman(mod, mea), "median_ape": median_ape(mod, mea),
            "median_ratio": float(np.median(ratio)),
            "geomean_ratio": float(np.exp(np.mean(np.log(ratio))))}


def print_summary(s: dict) -> None:
    if not s.get("rows"):
        return
    print(f"  {s['label']:34s} rows {s['rows']:4d} (+{s['unmodeled']} unmodeled)  "
          f"spearman {s['spearman']:.3f}  median_ape {s['median_ape']:.1%}  "
          f"modeled/measured median {s['median_ratio']:.2f} geomean {s['geomean_ratio']:.2f}")


def report(results: list[dict]) -> dict:
    ok = sorted((r for r in results if "modeled_us" in r), key=lambda r: r["row"])
    print(f"{'row':>4s} {'split':8s} {'cu':>3s} {'family':18s} {'kernel':44s} "
          f"{'measured us':>11s} {'modeled us':>10s} {'ratio':>6s} {'sim/cu wgs':>10s}")
    for r in ok:
        print(f"{r['row']:4d} {r['split']:8s} {r['cu_num']:>3s} {r['family']:18s} "
              f"{r['kernel'][9:53]:44s} {r['measured_us']:11.2f} {r['modeled_us']:10.2f} "
              f"{r['modeled_us'] / r['measured_us']:6.2f} "
              f"{r['simulated']:>4d}/{r['cu_workgroups']:<5d}")
    for r in results:
        if "unmodeled" in r:
            print(f"{r['row']:4d} unmodeled ({r['family']}, {r['kernel'][9:60]}): {r['unmodeled']}")
    print("\nper family (modeled vs measured):")
    groups: dict[tuple, list] = {}
    for r in results:
        groups.setdefault((r["family"], r["cu_num"]), []).append(r)
    for (fam, cu), rs in sorted(groups.items()):
        print_summary(summarize(rs, f"{fam} cu_num {cu}"))
    out = {}
    for split in ("fit", "validate"):
        rs = [r for r in results if r["split"] == split]
        s = summarize(rs, f"split {split}")
        print_summary(s)
        out[split] = s
    return out


# --- winners ------------------------------------------------------------------------------

def alternatives(row: dict, aiter: Path) -> list[dict]:
    """``row`` with each kernel of its family's launcher table (the ``hsa/gfx942`` CSV that
    lists its kernel) that AITer's launcher accepts for the row's shape and split: the
    candidates the tuner chose its winner among."""
    folder = aiter / Path(row["co"]).parent
    for table in sorted(folder.glob("*.csv")):
        with open(table) as f:
            entries = list(csv.DictReader(f))
        if any(e.get("knl_name") == row["kernel"] for e in entries):
            break
    else:
        return []
    out = []
    for e in entries:
        tm, tn = int(e.get("tile_m") or e["tileM"]), int(e.get("tile_n") or e["tileN"])
        if row["family"] == "fmoe_2stages":
            ok = tm == int(row["block_m"] or tm) and int(row["inter_dim"]) % tn == 0
        else:
            split = int(row["splitK"] or 1)
            ok = int(row["N"]) % tn == 0 and (split == 1 or e.get("splitK", "1") == "1")
        if ok:
            out.append(row | {"kernel": e["knl_name"],
                              "co": str(Path(row["co"]).parent / e["co_name"])})
    return out


def _time_all(rows: list[dict], aiter: Path, jobs: int) -> list[dict]:
    if jobs <= 1 or len(rows) <= 1:
        return [time_row(r, aiter) for r in rows]
    with ProcessPoolExecutor(jobs) as ex:
        return list(ex.map(time_row, rows, [aiter] * len(rows)))


def winners(rows: list[dict], aiter: Path, jobs: int = 1) -> dict:
    """Per row with two or more alternatives: does the model's fastest alternative equal
    the measured winner (the table's kernel)? Rows where an alternative cannot be modeled
    are counted apart. ``jobs`` processes time the alternatives."""
    agree = total = skipped = 0
    ranks = []
    alts = {r["row"]: alternatives(r, aiter) for r in rows}
    rows = [r for r in rows if len(alts[r["row"]]) >= 2]
    flat = [a | {"row": r["row"]} for r in rows for a in alts[r["row"]]]
    timed_all = iter(_time_all(flat, aiter, jobs))
    for r in rows:
        timed = [next(timed_all) for _ in alts[r["row"]]]
        if any("modeled_us" not in t for t in timed):
            skipped += 1
            continue
        order = sorted(timed, key=lambda t: t["modeled_us"])
        rank = [t["kernel"] for t in order].index(r["kernel"]) + 1
        total += 1
        agree += rank == 1
        ranks.append(rank)
        mine = next(t for t in timed if t["kernel"] == r["kernel"])
        print(f"  row {r['row']:4d} cu {r['cu_num']:>3s} measured winner {r['kernel'][9:60]}: "
              f"model's rank {rank} of {len(timed)} (model picks {order[0]['kernel'][9:60]}, "
              f"{order[0]['modeled_us']:.1f} us against {mine['modeled_us']:.1f})", flush=True)
    return {"agree": agree, "shapes": total, "skipped": skipped,
            "mean_rank": float(np.mean(ranks)) if ranks else float("nan")}


def table_sha() -> str:
    """The parameter table's hash: a kept result is reused only under the same table."""
    import hashlib

    from asmevo.timing.parameters import PARAMS_DIR
    return hashlib.sha256((PARAMS_DIR / "gfx942.toml").read_bytes()).hexdigest()[:16]


def run_rows(rows: list[dict], aiter: Path, jobs: int, kept: dict | None = None) -> list[dict]:
    """Each row's result: ``kept``'s (row number -> result modeled under this table) where
    it has one, else timed now."""
    kept = kept or {}
    results = [kept[r["row"]] for r in rows if r["row"] in kept]
    rows = [r for r in rows if r["row"] not in kept]
    t0 = time.time()
    if jobs <= 1:
        for i, r in enumerate(rows):
            results.append(time_row(r, aiter))
            _progress(results[-1], i + 1, len(rows), t0)
        return results
    with ProcessPoolExecutor(jobs) as ex:
        for i, res in enumerate(ex.map(time_row, rows, [aiter] * len(rows))):
            results.append(res)
            _progress(res, i + 1, len(rows), t0)
    return results


def _progress(res: dict, i: int, n: int, t0: float) -> None:
    what = (f"{res['modeled_us']:.1f} us modeled / {res['measured_us']:.1f} measured"
            if "modeled_us" in res else f"unmodeled: {res['unmodeled'][:80]}")
    print(f"[{i}/{n} {time.time() - t0:.0f}s] row {res['row']} {res['kernel'][9:50]}: {what} "
          f"({res['seconds']} s)", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    # timing reads only the pages a launch touches: its zero-filled buffers are never
    # materialized, so the largest MoE weights (1.9 GB) fit under raised limits
    os.environ.setdefault("ASMEVO_MAX_BUFFER_BYTES", str(4 << 30))
    os.environ.setdefault("ASMEVO_MAX_LAUNCH_BYTES", str(7 << 30))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aiter", default=os.environ.get("AITER_CHECKOUT", "/work/aiter_extract"),
                    help="an AITer checkout holding hsa/gfx942 (env AITER_CHECKOUT)")
    ap.add_argument("--split", default="validate", choices=("fit", "validate", "all"))
    ap.add_argument("--families", nargs="+", help="only these families")
    ap.add_argument("--every", type=int, default=1, help="every k-th row of the split")
    ap.add_argument("--rows", nargs="+", type=int, help="only these row numbers")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write the per-row results here; with --resume, read them "
                    "first and time only the rows it lacks (or did not model) under this table")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--winners", action="store_true",
                    help="also time every alternative kernel of each row's shape: how often "
                         "the model's fastest is the measured winner")
    args = ap.parse_args(argv)
    aiter = Path(args.aiter)
    if not (aiter / "hsa" / "gfx942").is_dir():
        print(f"bench_fidelity: {aiter}: no hsa/gfx942 (an AITer checkout; "
              f"experiments/fidelity/extract_aiter.py)", file=sys.stderr)
        return 2
    rows = [r for r in read_rows() if args.split == "all" or r["split"] == args.split]
    if args.families:
        rows = [r for r in rows if r["family"] in args.families]
    if args.rows:
        rows = [r for r in rows if r["row"] in args.rows]
    rows = rows[::max(1, args.every)]
    print(f"{len(rows)} rows (split {args.split}, every {args.every}); AITer checkout {aiter}")
    t0 = time.time()
    kept = {}
    if args.resume and args.json and Path(args.json).exists():
        kept = {r["row"]: r for r in json.loads(Path(args.json).read_text())
                if "modeled_us" in r and r.get("table") == table_sha()}
    results = run_rows(rows, aiter, args.jobs, kept)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    s = report(results)
    print(f"\nwall {time.time() - t0:.0f} s; modeled = CDNA3 timing model, measured = AITer's "
          f"tuned tables (MI308X cu_num 80, MI300X cu_num 304)")
    win = None
    if args.winners:
        print("\nwinners (the tuner's pick among the family's kernels for each shape):")
        win = winners([r for r in rows if any(x["row"] == r["row"] and "modeled_us" in x
                                              for x in results)], aiter, args.jobs)
    key = args.split if args.split != "all" else "validate"
    if win is not None:
        print(f"winner_shapes={win['shapes']} (skipped {win['skipped']}: an alternative "
              f"could not be modeled); measured winner's mean rank {win['mean_rank']:.2f}")
        print(f"winner_agreement={win['agree']}/{win['shapes']}")
    if s.get(key, {}).get("rows"):
        print(f"rows={s[key]['rows']}")
        print(f"spearman={s[key]['spearman']:.3f}")
        print(f"median_ape={s[key]['median_ape']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
