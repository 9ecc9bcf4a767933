"""Headroom under the timing model: how far K0 is from the bounds the calibrated model implies.

    python3 experiments/headroom.py --set production [--kernels K ...] [--size large]
        [--every-round] [--results experiments/results/bench_search_production_....txt ...]

Per kernel, at the size ``bench_search`` times its bests at (the spec's ``large``; the
timing inputs: seed 0, no special values), the modeled cycles of K0
(:func:`asmevo.timing.model.simulate_launch` on the launch's trace, the same figure
``model_launch`` gives) and lower bounds on them that the model itself implies for the
busiest CU, each plus the launch overhead the model adds to every launch:

* ``hbm``: the bytes the model charges that CU's HBM server (its share of the launch's
  unique bytes, loads and stores, from the emulator's memory trace) over its share of the
  achievable bandwidth (``hbm_bytes_per_second x hbm_efficiency`` split evenly over the CUs
  the grid occupies); ``mall`` and ``l2`` likewise for the bytes served there;
* ``mfma``: MFMA pipe cycles over the CU's SIMDs; ``valu``: VALU pipe cycles over the
  SIMDs (quarter-rate and transcendental ops count 16); ``issue``: one VALU-port slot per
  VALU or MFMA instruction; ``salu``: scalar-port slots;
* ``ta``: the CU's texture-addresser cycles (VMEM), ``lds``: its LDS cycles (bank
  conflicts included);
* ``wave``: every executed instruction takes a wave one issue slot, over the waves the CU
  holds at once.

``bound`` is the largest; ``headroom = K0 / bound`` is what hiding every latency could
give while keeping K0's instructions and bytes. ``floor`` keeps only what an equal kernel
cannot drop (``hbm`` and ``mfma``): the headroom if every other instruction went too.
The last columns: the best modeled speedup so far for the kernel in ``--results``, the
bounds, and the busiest CU's stall cycles by what they waited on.

A row below 1 means the model's own figure is under its bound. Until 2026-12-07
``model_launch`` extrapolated after two rounds of resident workgroups before a streaming
kernel's HBM backlog showed; now the extrapolation is bounded below by the CU's memory
backlog (``CuMemory.backlog_bound``; ``--every-round`` simulates every workgroup, to check).
``CAVEAT`` marks LDS-DMA loads the model times as stores (their bytes charged as HBM
writes), which it did until 2026-12-07 (``asmevo/timing/access.py`` times them as loads).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

TARGET = 1.10
FLOOR_TERMS = ("hbm", "mfma")


def _launch(kernel_dir: Path, size: str):
    """(K0's bytes, the spec at ``size``, the inputs bench_search times on)."""
    from asmevo.files import read_input
    from asmevo.launch.spec import load_spec
    from asmevo.verify.inputs import input_sets

    spec = load_spec(kernel_dir, size)
    data = read_input(spec.code_object_for(None), what="code object")
    return data, spec, input_sets(spec, (0,), special=False)[0][1]


def modeled(data: bytes, spec, values: dict, *, every_round: bool = False):
    """(trace, params, TimingResult): model_launch's loop (rounds doubled until the
    extrapolated rate is steady), keeping the trace the bounds need; ``every_round``:
    every workgroup of the busiest CU simulated, none extrapolated."""
    from asmevo.timing.model import ROUNDS, simulate_launch, trace_launch
    from asmevo.timing.parameters import load_params

    rounds = None if every_round else ROUNDS
    while True:
        trace = trace_launch(data, spec, values, rounds=rounds)
        p = load_params(trace.target)
        res = simulate_launch(trace, p)
        if res.steady is not False or rounds is None:
            return trace, p, res
        rounds *= 2


def bounds(trace, p, res) -> dict[str, float]:
    """The busiest CU's lower bounds (cycles, launch overhead not included), by name."""
    from asmevo.timing.model import instruction_record
    from asmevo.timing.cu import (K_LDS, K_MFMA, K_SALU, K_SMEM, K_VALU, K_VMEM,
                                      resident_limit)

    issue = np.zeros(len(trace.texts))
    for name, (a, b) in trace.per_fn.items():
        issue[a:b] = res.issue[name]
    recs = [instruction_record(t, p) for t in trace.texts]
    kinds = np.array([r.kind for r in recs])
    cost = np.array([max(r.cost, 1e-9) for r in recs], float)
    simds = p.simds_per_cu
    per = {k: float(issue[kinds == k].sum()) for k in (K_VALU, K_MFMA, K_SALU, K_SMEM,
                                                      K_VMEM, K_LDS)}
    slots = float((issue / cost)[(kinds == K_VALU) | (kinds == K_MFMA)].sum()) * p.issue["slot_cycles"]
    mem = res.memory
    active = max(1, min(p.compute_units, trace.nwg))
    hbm_bpc = p.hbm_bytes_per_cycle * p.hbm_efficiency / active
    mall_bpc = p.memory.mall_bytes_per_cycle / active if p.memory.mall else math.inf
    scale = trace.cu_wgs / max(1, len(trace.groups))
    steps = sum(len(s) for g in trace.groups for _, s in g) * scale
    resident = resident_limit(trace.wpg, p, trace.occupancy) * trace.wpg
    return {"hbm": mem.get("hbm_bytes", 0.0) / hbm_bpc,
            "mall": mem.get("mall_bytes", 0.0) / mall_bpc,
            "l2": mem.get("l2_bytes", 0.0) / p.l2_bytes_per_cycle_per_cu,
            "mfma": per[K_MFMA] / simds, "valu": per[K_VALU] / simds, "issue": slots / simds,
            "salu": (per[K_SALU] + per[K_SMEM]) / simds, "ta": per[K_VMEM], "lds": per[K_LDS],
            "wave": steps * p.issue["slot_cycles"] / max(1, resident)}


def stall_shares(trace, p, res) -> dict[str, float]:
    """The busiest CU's stall cycles by what the waves waited on, as shares of them all:
    ``vm`` (s_waitcnt on vmcnt), ``lgkm`` (on lgkmcnt only), ``barrier``, ``pipe`` (a
    VALU/MFMA instruction waiting for its pipe or an operand), ``other`` (the rest: issue
    slots taken by other waves, VMEM/LDS/scalar instructions)."""
    from asmevo.timing.model import instruction_record
    from asmevo.timing.cu import K_BARRIER, K_MFMA, K_VALU, K_WAIT

    out = dict.fromkeys(("vm", "lgkm", "barrier", "pipe", "other"), 0.0)
    for name, (a, b) in trace.per_fn.items():
        for text, st in zip(trace.texts[a:b], res.stalls[name]):
            if not st:
                continue
            r = instruction_record(text, p)
            if r.kind == K_WAIT:
                key = "vm" if r.wvm is not None else "lgkm"
            elif r.kind == K_BARRIER:
                key = "barrier"
            elif r.kind in (K_VALU, K_MFMA):
                key = "pipe"
            else:
                key = "other"
            out[key] += float(st)
    total = sum(out.values()) or 1.0
    return {k: v / total for k, v in out.items()}


def dma_as_stores(trace, p) -> int:
    """Instructions of the image that load global memory into LDS (``buffer_load_* ... lds``)
    and that the model times as stores (its record's ``store``): a caveat on the row, since
    their bytes are charged as HBM writes and their completion as a store's."""
    from asmevo.timing.model import instruction_record
    from asmevo.timing.cu import K_VMEM

    n = 0
    for text in trace.texts:
        words = text.replace(",", " ").split()
        if words and words[0].startswith(("buffer_load", "global_load")) and "lds" in words[1:]:
            r = instruction_record(text, p)
            n += r.kind == K_VMEM and r.store
    return n


def headroom(kernel_dir: Path, size: str, every_round: bool = False) -> dict:
    data, spec, values = _launch(kernel_dir, size)
    trace, p, res = modeled(data, spec, values, every_round=every_round)
    terms = bounds(trace, p, res)
    over = res.overhead_cycles
    name, top = max(terms.items(), key=lambda kv: kv[1])
    floor = max(terms[t] for t in FLOOR_TERMS)
    spec_bytes = float(sum(a.nbytes for a in spec.buffers))
    return {"kernel": kernel_dir.name, "k0": res.cycles, "overhead": over, "terms": terms,
            "bound": over + top, "which": name, "headroom": res.cycles / (over + top),
            "floor": over + floor, "floor_headroom": res.cycles / (over + floor),
            "dram_bytes": res.dram_bytes, "spec_bytes": spec_bytes,
            "workgroups": res.workgroups, "cu_workgroups": res.cu_workgroups,
            "occupancy": res.occupancy, "stalls": stall_shares(trace, p, res),
            "dma_as_stores": dma_as_stores(trace, p)}


_BEST = re.compile(r"^(\S+)\s+seed \d+\s+K0\s+\d+ cyc\s+best\s+\d+\s+speedup ([0-9.]+)x")


def best_speedups(path: Path | None) -> dict[str, float]:
    """kernel -> best modeled speedup in a bench_search output (the largest over seeds)."""
    out: dict[str, float] = {}
    if path is None or not path.exists():
        return out
    for line in path.read_text().splitlines():
        m = _BEST.match(line)
        if m:
            out[m.group(1)] = max(out.get(m.group(1), 0.0), float(m.group(2)))
    return out


def default_results(which: str) -> Path | None:
    found = sorted((ROOT / "experiments" / "results").glob(f"bench_search_{which}_*.txt"))
    return found[-1] if found else None


def row_text(r: dict, best: float | None) -> str:
    t = r["terms"]
    best_s = f"{best:.4f}" if best else "-"
    return (f"{r['kernel']:52s} {r['k0']:>9d} {r['bound']:>9.0f} {r['which']:>5s} "
            f"{r['headroom']:>6.3f} {r['floor']:>9.0f} {r['floor_headroom']:>6.3f} {best_s:>7s}  "
            f"hbm {t['hbm']:.0f} mfma {t['mfma']:.0f} valu {t['valu']:.0f} ta {t['ta']:.0f} "
            f"lds {t['lds']:.0f} wave {t['wave']:.0f} (ovh {r['overhead']}, "
            f"{r['dram_bytes'] / 1e6:.1f}/{r['spec_bytes'] / 1e6:.1f} MB, "
            f"{r['cu_workgroups']}/{r['workgroups']} wg, occ {r['occupancy']}; stalls "
            + " ".join(f"{k} {v:.0%}" for k, v in r["stalls"].items() if v >= 0.005) + ")"
            + (f" CAVEAT {r['dma_as_stores']} LDS-DMA loads timed as stores"
               if r.get("dma_as_stores") else ""))


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv=None) -> int:
    from bench_search import BenchError, kernel_dirs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="production", help="naive, corpus, production or a folder")
    ap.add_argument("--kernels", nargs="*", help="only these kernels (folder names)")
    ap.add_argument("--size", default="large", help="the spec size (bench_search: large)")
    ap.add_argument("--every-round", action="store_true", help="simulate every workgroup of "
                    "the busiest CU instead of extrapolating after two rounds (model_launch's "
                    "figure); K0 then differs from bench_search's where the rate is not the "
                    "bandwidth's yet after two rounds")
    ap.add_argument("--results", type=Path, nargs="*", help="bench_search outputs with the "
                    "bests so far, the largest per kernel kept (default: the newest "
                    "bench_search_<set>_*.txt)")
    args = ap.parse_args(argv)
    try:
        dirs = kernel_dirs(args.set)
    except BenchError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.kernels:
        dirs = [d for d in dirs if d.name in set(args.kernels)]
    paths = args.results or [p for p in [default_results(args.set)] if p]
    bests: dict[str, float] = {}
    for path in paths:
        for k, v in best_speedups(path).items():
            bests[k] = max(bests.get(k, 0.0), v)
    how = "every workgroup of the busiest CU simulated" if args.every_round else \
        "model_launch's rounds"
    print(f"# headroom at {args.size} (modeled, {how}; bests: "
          f"{', '.join(p.name for p in paths) or 'no results'})")
    print(f"{'kernel':52s} {'K0 cyc':>9s} {'bound':>9s} {'by':>5s} {'room':>6s} "
          f"{'floor':>9s} {'room':>6s} {'best':>7s}")
    rooms, floors = [], []
    for d in dirs:
        try:
            r = headroom(d, args.size, args.every_round)
        except Exception as exc:     # a kernel the model cannot time: said, the rest go on
            print(f"{d.name:52s} cannot be modeled: {type(exc).__name__}: {exc}")
            continue
        rooms.append(r["headroom"])
        floors.append(r["floor_headroom"])
        print(row_text(r, bests.get(d.name)), flush=True)
    print(f"geomean_headroom={geomean(rooms):.4f}")
    print(f"geomean_floor_headroom={geomean(floors):.4f}")
    print(f"kernels_with_headroom_over_{TARGET:.2f}={sum(x > TARGET for x in rooms)}/{len(rooms)}")
    print(f"kernels_with_floor_headroom_over_{TARGET:.2f}="
          f"{sum(x > TARGET for x in floors)}/{len(floors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
