"""Why a candidate's modeled time moved: per-window terms that add up to the whole change.

The model's launch time is the busiest CU's cycles plus the launch overhead, and the CU's
cycles are its waves' work divided by how many of them make progress at once:
``cu_cycles = W / P`` with ``W`` the issue and stall cycles summed over the CU's waves
(every instruction's, :class:`~asmevo.timing.model.TimingResult` ``issue`` + ``stalls``) and
``P = W / cu_cycles`` their overlap. Between K0 (0) and a candidate (1),

    cu_1 - cu_0 = sum_w (W_w1 - W_w0) * (1/P_0 + 1/P_1) / 2          (the windows)
                + (W_0 + W_1) / 2 * (1/P_1 - 1/P_0)                   (overlap)

exactly, for any split of ``W`` into windows ``w``. So each window's term is its change in
wave cycles at the mean overlap, and the overlap term is what the change in parallelism
did: more waves resident (occupancy: an edit that frees registers), latency hidden behind
other waves, the dispatcher's pace. With the launch overhead's change (and the rounding
to whole cycles) the terms sum to the change in modeled cycles, to the cycle.
"""
from __future__ import annotations


def _wave_cycles(res) -> dict:
    return {fn: res.issue[fn] + res.stalls[fn] for fn in res.issue}


def explain(k0, best, regions: list[tuple], kernel: str) -> list[dict]:
    """Terms of ``best.cycles - k0.cycles`` (modeled): one per region of ``kernel``
    (``(K0 start, K0 end, best start, best end, label)``, K0's blocks followed through the
    edits), one for the other functions, the overlap term (named for occupancy when it
    changed) and the launch overhead; ``delta`` of each in cycles, summing to the total."""
    c0, c1 = _wave_cycles(k0), _wave_cycles(best)
    w0 = float(sum(v.sum() for v in c0.values()))
    w1 = float(sum(v.sum() for v in c1.values()))
    inv0 = k0.cu_cycles / w0 if w0 else 0.0
    inv1 = best.cu_cycles / w1 if w1 else 0.0
    mean_inv = (inv0 + inv1) / 2
    rows = []
    seen0 = seen1 = 0.0
    for a0, b0, a1, b1, label in regions:
        x, y = float(c0[kernel][a0:b0].sum()), float(c1[kernel][a1:b1].sum())
        seen0, seen1 = seen0 + x, seen1 + y
        if x or y:
            rows.append({"window": f"{kernel}[{a0}:{b0}]", "label": label,
                         "best": f"[{a1}:{b1}]", "k0_cycles": x, "best_cycles": y,
                         "delta": (y - x) * mean_inv})
    rest0, rest1 = w0 - seen0, w1 - seen1
    if rest0 or rest1:
        rows.append({"window": "other functions", "label": "", "best": "", "k0_cycles": rest0,
                     "best_cycles": rest1, "delta": (rest1 - rest0) * mean_inv})
    occ = (f"occupancy {k0.occupancy} -> {best.occupancy} waves/SIMD, overlap and dispatch"
           if k0.occupancy != best.occupancy else "overlap of waves (latency hiding, dispatch)")
    rows.append({"window": "parallelism", "label": occ, "best": "", "k0_cycles": w0,
                 "best_cycles": w1, "delta": (w0 + w1) / 2 * (inv1 - inv0)})
    accounted = best.cu_cycles - k0.cu_cycles
    other = (best.cycles - k0.cycles) - accounted
    if other:
        rows.append({"window": "launch", "label": "launch overhead and rounding", "best": "",
                     "k0_cycles": k0.cycles - k0.cu_cycles,
                     "best_cycles": best.cycles - best.cu_cycles, "delta": float(other)})
    return rows


def summarize(rows: list[dict], top: int = 6) -> list[dict]:
    """The ``top`` window terms that moved most, the rest of the windows as one row, and
    the parallelism and launch rows; the deltas still sum to the total."""
    fixed = [r for r in rows if r["window"] in ("parallelism", "launch")]
    windows = sorted((r for r in rows if r not in fixed and abs(r["delta"]) >= 0.5),
                     key=lambda r: r["delta"])
    small = [r for r in rows if r not in fixed and abs(r["delta"]) < 0.5]
    rest = windows[top:] + small
    out = windows[:top]
    if rest:
        out.append({"window": f"{len(rest)} more", "label": "", "best": "",
                    "k0_cycles": sum(r["k0_cycles"] for r in rest),
                    "best_cycles": sum(r["best_cycles"] for r in rest),
                    "delta": sum(r["delta"] for r in rest)})
    return out + fixed
