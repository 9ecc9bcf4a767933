"""Fit the timing model's calibrated parameters on the ``fit`` rows, and their errors.

    python experiments/fidelity/fit.py --aiter AITER_CHECKOUT [--every 6] [--cache DIR]

Only rows whose split is ``fit`` (``bench_fidelity.split_of``: MI308X rows of the GEMM
families) are read; the ``validate`` rows are never touched here. Each row is emulated
once (its :class:`~asmevo.timing.model.LaunchTrace` pickled under ``--cache``), then only the
per-CU simulation runs per parameter set. The loss is the mean absolute log ratio of
modeled to measured time. The launch overhead is additive, so it is solved for each
parameter set by a one-dimensional search; the others by a coordinate search over
multiplicative steps, within the bounds of :data:`FITTED`. Printed: the fitted values,
each with its error (the relative change that raises the loss by one standard error of
the per-row loss: the ``[calibration]`` table), and the fit rows' ``spearman=`` and
``median_ape=`` under the fitted set.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import bench_fidelity as B                                          # noqa: E402
from fidelity import families as F                                  # noqa: E402

# parameter -> (lowest, highest) value the search may take
FITTED = {
    "machine.clock_hz": (1.0e9, 2.1e9),                 # sustained, at most the peak
    "machine.hbm_efficiency": (0.3, 1.0),
    "machine.dispatch_cycles_per_workgroup": (0.0, 64.0),
    "latency.vmem_hbm": (450.0, 800.0),                 # issue 19: 500-800 cycles
    "memory.atomic_lane_cycles": (0.0, 8.0),
}
OVERHEAD = "machine.launch_overhead_cycles"
TRACE_VERSION = 3       # bump when trace_launch changes what it keeps (3: access widths)


def load_items(rows: list[dict], aiter: Path, cache: Path) -> list[tuple]:
    """(row, trace, memset bytes) of every row that can be launched; traces from the
    cache where they are (keyed by the row's launch), else emulated and kept."""
    from asmevo.timing import model as T

    cache.mkdir(parents=True, exist_ok=True)
    items = []
    for r in rows:
        device = B.DEVICES[r["cu_num"]]
        with tempfile.TemporaryDirectory(prefix="fit-") as td:
            try:
                spec, values, memset = B.launch_of(r, aiter, Path(td))
            except F.Unmodeled as exc:
                print(f"row {r['row']}: unmodeled: {exc}", file=sys.stderr)
                continue
            code = spec.code_object.read_bytes()
            # the launch's own text (not its temporary path), the binary, the device
            key = hashlib.sha256(repr((F.build(r, aiter).toml, T._values_hash(values),
                                       hashlib.sha256(code).hexdigest(), device, T.ROUNDS,
                                       TRACE_VERSION)).encode()).hexdigest()[:24]
            path = cache / f"{key}.pkl"
            if path.exists():
                trace = pickle.loads(path.read_bytes())
            else:
                t0 = time.perf_counter()
                try:
                    trace = T.trace_launch(code, spec, values, device=device, rounds=T.ROUNDS)
                except Exception as exc:   # noqa: BLE001 - reported, the row left out
                    print(f"row {r['row']}: {type(exc).__name__}: {exc}"[:200], file=sys.stderr)
                    continue
                path.write_bytes(pickle.dumps(trace))
                print(f"row {r['row']}: traced in {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr, flush=True)
        items.append((r, trace, memset))
    return items


def modeled_us(items, params: dict, base_by_device: dict) -> np.ndarray:
    """Each item's modeled microseconds under ``params`` (values by name), launch overhead 0."""
    from asmevo.timing import model as T

    out = []
    for r, trace, memset in items:
        p = base_by_device[trace.device].with_values(params | {OVERHEAD: 0}, "fit")
        res = T.simulate_launch(trace, p)
        out.append((res.seconds + B.memset_seconds(memset, p)) * 1e6)
    return np.asarray(out)


def best_overhead(sim_us: np.ndarray, meas: np.ndarray, clock_hz: float) -> tuple[float, float]:
    """The additive launch overhead (cycles) that minimizes the loss, and that loss."""
    def loss(c):
        return float(np.mean(np.abs(np.log((sim_us + c / clock_hz * 1e6) / meas))))
    lo, hi = 0.0, 40000.0
    for _ in range(60):                        # golden-section on a unimodal loss
        a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        if loss(a) <= loss(b):
            hi = b
        else:
            lo = a
    c = (lo + hi) / 2
    return c, loss(c)


class Objective:
    def __init__(self, items, base_by_device):
        self.items, self.base = items, base_by_device
        self.meas = np.asarray([float(r["us"]) for r, _, _ in items])
        self.calls = 0

    def __call__(self, params: dict) -> tuple[float, float]:
        self.calls += 1
        t0 = time.perf_counter()
        sim = modeled_us(self.items, params, self.base)
        if self.calls == 1:
            print(f"  one parameter set: {time.perf_counter() - t0:.0f} s", flush=True)
        clock = params.get("machine.clock_hz") or next(iter(self.base.values())).clock_hz
        return best_overhead(sim, self.meas, clock)


def coordinate_search(obj: Objective, start: dict, sweeps: int = 1) -> tuple[dict, float, float]:
    """One parameter at a time (in FITTED's order: the clock first, it scales everything),
    a golden-section search of its log within FITTED's bounds, the others held; ``sweeps``
    passes. A parameter that is zero is searched on its bounds' linear scale."""
    cur = dict(start)
    over, best = obj(cur)
    for sweep in range(sweeps):
        for name, (lo, hi) in FITTED.items():
            v, o, loss = _golden(obj, cur, name, lo, hi)
            if loss < best - 1e-5:
                cur[name], best, over = v, loss, o
            print(f"  sweep {sweep} {name} = {cur[name]:.4g}: loss {best:.4f} "
                  f"(overhead {over:.0f} cycles; {obj.calls} sets)", flush=True)
    return cur, over, best


def _golden(obj: Objective, cur: dict, name: str, lo: float, hi: float, steps: int = 7):
    """A golden-section search of ``name`` in [lo, hi] (log scale when lo > 0)."""
    log = lo > 0
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    val = (lambda x: math.exp(x)) if log else (lambda x: x)
    seen = {}

    def f(x):
        if x not in seen:
            seen[x] = obj(cur | {name: val(x)})
        return seen[x][1]
    for _ in range(steps):
        c, d = a + (b - a) * 0.382, a + (b - a) * 0.618
        if f(c) <= f(d):
            b = d
        else:
            a = c
    x = min(seen, key=lambda k: seen[k][1])
    return val(x), seen[x][0], seen[x][1]


def errors(obj: Objective, best: dict, over: float, loss: float) -> dict:
    """Per parameter: the relative change that raises the loss by one standard error of
    the per-row loss (both directions tried; the smaller change is kept)."""
    sim = modeled_us(obj.items, best, obj.base)
    clock = best["machine.clock_hz"]
    per_row = np.abs(np.log((sim + over / clock * 1e6) / obj.meas))
    se = float(per_row.std(ddof=1) / math.sqrt(len(per_row)))
    out = {}
    for name in list(FITTED) + [OVERHEAD]:
        found = []
        for direction in (1, -1):
            for rel in (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75):
                f = (1 + rel) ** direction
                if name == OVERHEAD:
                    got = float(np.mean(np.abs(np.log((sim + over * f / clock * 1e6)
                                                      / obj.meas))))
                else:
                    if best[name] == 0:
                        break
                    got = obj(best | {name: best[name] * f})[1]
                if got >= loss + se:
                    found.append(rel)
                    break
        out[name] = min(found) if found else 0.75
    return out


def main(argv=None) -> int:
    from asmevo.timing.parameters import load_params

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aiter", default="/work/aiter_extract")
    ap.add_argument("--every", type=int, default=12,
                    help="every k-th fit row of each family, at least --per-family of each")
    ap.add_argument("--per-family", type=int, default=12)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "asmevo-fit-traces"))
    ap.add_argument("--sweeps", type=int, default=1)
    args = ap.parse_args(argv)
    rows = []
    fit = [r for r in B.read_rows() if r["split"] == "fit"]
    for fam in sorted({r["family"] for r in fit}):
        of = [r for r in fit if r["family"] == fam]
        rows += of[::max(1, min(args.every, len(of) // args.per_family))]
    t0 = time.time()
    items = load_items(rows, Path(args.aiter), Path(args.cache))
    print(f"{len(items)} fit rows traced ({time.time() - t0:.0f} s)")
    base = {d: load_params("gfx942", d) for d in B.DEVICES.values()}
    p0 = base["mi308x"]
    start = {name: p0.value(name) for name in FITTED}
    obj = Objective(items, base)
    fitted, over, loss = coordinate_search(obj, start, args.sweeps)
    err = errors(obj, fitted, over, loss)
    sim = modeled_us(items, fitted, base) + over / fitted["machine.clock_hz"] * 1e6
    print(f"\nfitted on {len(items)} fit rows ({obj.calls} parameter sets, "
          f"{time.time() - t0:.0f} s): loss {loss:.4f}")
    for name in list(FITTED) + [OVERHEAD]:
        v = over if name == OVERHEAD else fitted[name]
        print(f"  {name:42s} {v:12.5g}  error +-{err[name]:.0%}")
    print(f"spearman={B.spearman(sim, obj.meas):.3f}")
    print(f"median_ape={B.median_ape(sim, obj.meas):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
