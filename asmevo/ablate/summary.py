"""The ablation's tables, read from the cells' archives only.

Per cell: the best speedup (the engine's fitness of the best equal candidate;
K0 is 1.0), its best-so-far curve against fresh evaluations, operator counts
and LLM spend. Per operator set and seed, over the kernels: the geometric mean
of best speedups, the fraction of kernels improved (best > 1), the acceptance
rate (equal / edits, pooled over kernels; overall and per operator), the
evaluations to reach 95% of the final gain (first evaluation where best ≥
1 + 0.95·(B − 1); mean over the kernels that improved), and LLM dollars per
improvement (total spend / candidates that were equal and faster than their
parent). Per set: the mean over seeds and a two-sided 95% Student-t interval
(mean ± t₀.₉₇₅,ₙ₋₁ · s/√n; none with a single seed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from asmevo.archive import queries
from asmevo.ablate.cells import open_cell_archive
from asmevo.ablate.config import AblationConfig, Cell
from asmevo.verdict import coverage_of

# two-sided 95% Student-t quantiles t(0.975, df), df = 1..30
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
GAIN_FRACTION = 0.95


def t975(df: int) -> float:
    """t quantile for a 95% two-sided interval (table to 30, then a Cornish-Fisher series)."""
    if df < 1:
        return float("nan")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def t_interval(values) -> tuple[float, float, float, int]:
    """(mean, low, high, n) over the finite values; the interval is NaN below two values."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(v.mean())
    if n < 2:
        return m, float("nan"), float("nan"), n
    h = t975(n - 1) * float(v.std(ddof=1)) / math.sqrt(n)
    return m, m - h, m + h, n


@dataclass
class CellResult:
    set: str
    kernel: str
    seed: int
    status: str
    stop_reason: str
    evaluations: int
    best: float
    label: str
    evals_to_95: float
    improvements: int
    llm_dollars: float
    seconds: float                         # engine wall time over every session (not a result)
    curve: np.ndarray                      # best so far after e fresh evaluations, e = 0..
    operators: pd.DataFrame = field(repr=False)
    proved: int = 0                        # equal candidates the prover proved (docs/prover.md)


def _curve(inds: pd.DataFrame) -> np.ndarray:
    if inds.empty:
        return np.ones(1)
    evals = inds["first"].astype(int).cumsum().to_numpy()
    score = inds["fitness"].where(inds["status"] == "equal", 0.0).fillna(0.0).to_numpy()
    best = np.maximum.accumulate(np.maximum(score, 0.0))
    out = np.ones(int(evals[-1]) + 1)          # before any evaluation: K0's 1.0
    np.maximum.at(out, evals, best)
    return np.maximum.accumulate(out)


def evals_to_gain(curve: np.ndarray, fraction: float = GAIN_FRACTION) -> float:
    """Fresh evaluations until the best reached ``fraction`` of the final gain; NaN if none."""
    final = float(curve[-1])
    if not final > 1.0:
        return float("nan")
    return float(np.argmax(curve >= 1.0 + fraction * (final - 1.0) - 1e-12))


def read_cell(cell: Cell, out: Path) -> CellResult | None:
    """A cell's result from its archive; None if it has not started."""
    archive = open_cell_archive(out / cell.relpath)
    if archive is None:
        return None
    try:
        runs = archive.runs()
        if not runs:
            return None
        row = runs[-1]
        rid = int(row["run_id"])
        inds = queries.individuals(archive, rid)
        ops = queries.operator_stats(archive, rid)
        dollars = archive.llm_dollars(rid)
        last = archive.last_checkpoint(rid)
    finally:
        archive.close()
    eq = inds[inds["status"] == "equal"]
    curve = _curve(inds)
    labels = sorted(set(eq["label"].dropna()))
    return CellResult(
        cell.set, cell.kernel, cell.seed, row["status"], row["stop_reason"],
        int(inds["first"].sum()), float(eq["fitness"].max()) if not eq.empty else float("nan"),
        "+".join(labels) or "-", evals_to_gain(curve),
        int(ops["improved"].sum()) if not ops.empty else 0, float(dollars),
        float(last[1]["spent"]["wall_seconds"]) if last else 0.0, curve, ops,
        int((eq["details"].map(coverage_of) == "proved").sum()))


def read_cells(ab: AblationConfig, out: Path) -> list[CellResult]:
    return [r for r in (read_cell(c, out) for c in ab.cells()) if r is not None]


# -- tables ------------------------------------------------------------------------------

def cells_table(results: list[CellResult]) -> pd.DataFrame:
    return pd.DataFrame([{
        "set": r.set, "kernel": r.kernel, "seed": r.seed, "status": r.status,
        "stop_reason": r.stop_reason, "evaluations": r.evaluations, "best_speedup": r.best,
        "timing": r.label, "evals_to_95": r.evals_to_95, "improvements": r.improvements,
        "llm_dollars": r.llm_dollars,
        "edits": int(r.operators["edits"].sum()) if not r.operators.empty else 0,
        "accepted": int(r.operators["accepted"].sum()) if not r.operators.empty else 0,
        "proved": r.proved,
    } for r in results])


def timings_table(results: list[CellResult]) -> pd.DataFrame:
    """Engine seconds per cell: what a budget for the next ablation is sized from."""
    return pd.DataFrame([{"set": r.set, "kernel": r.kernel, "seed": r.seed,
                          "evaluations": r.evaluations, "engine_seconds": round(r.seconds, 2)}
                         for r in results])


def _per_seed(ab: AblationConfig, results: list[CellResult]) -> pd.DataFrame:
    """One row per (set, seed): the kernel aggregates that the seeds then average."""
    rows = []
    for (s, seed), grp in _group(results, lambda r: (r.set, r.seed)).items():
        best = np.array([r.best for r in grp])
        ok = best[np.isfinite(best) & (best > 0)]
        edits = sum(int(r.operators["edits"].sum()) for r in grp if not r.operators.empty)
        acc = sum(int(r.operators["accepted"].sum()) for r in grp if not r.operators.empty)
        impr = sum(r.improvements for r in grp)
        dollars = sum(r.llm_dollars for r in grp)
        reach = [r.evals_to_95 for r in grp if math.isfinite(r.evals_to_95)]
        rows.append({
            "set": s, "seed": seed, "kernels": len(grp),
            "geomean_speedup": float(np.exp(np.log(ok).mean())) if len(ok) else float("nan"),
            "frac_improved": float((best > 1.0).mean()),
            "acceptance_rate": acc / edits if edits else float("nan"),
            "evals_to_95": float(np.mean(reach)) if reach else float("nan"),
            "llm_dollars": dollars,
            "llm_dollars_per_improvement": dollars / impr if impr else
            (0.0 if dollars == 0 else float("nan")),
            "evaluations": float(np.mean([r.evaluations for r in grp])),
        })
    return pd.DataFrame(rows)


METRICS = ("geomean_speedup", "frac_improved", "acceptance_rate", "evals_to_95",
           "llm_dollars_per_improvement")


def summary_table(ab: AblationConfig, results: list[CellResult]) -> pd.DataFrame:
    """One row per operator set: each metric's mean over seeds with its 95% t-interval."""
    per_seed = _per_seed(ab, results)
    label = "+".join(sorted({r.label for r in results if r.label != "-"})) or "-"
    rows = []
    for s in ab.sets:
        grp = per_seed[per_seed["set"] == s] if not per_seed.empty else per_seed
        cells = [r for r in results if r.set == s]
        row = {"set": s, "operators": " ".join(ab.sets[s]), "timing": label,
               "cells_done": sum(r.status == "finished" for r in cells),
               "cells": len(ab.kernels) * len(ab.seeds), "seeds": len(grp)}
        for m in METRICS:
            mean, lo, hi, _ = t_interval(grp[m] if len(grp) else [])
            row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi}
        row["llm_dollars"] = float(grp["llm_dollars"].sum()) if len(grp) else 0.0
        row["evaluations_per_cell"] = float(grp["evaluations"].mean()) if len(grp) else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


def operators_table(ab: AblationConfig, results: list[CellResult]) -> pd.DataFrame:
    """Acceptance and improvement rates per (set, operator): mean over seeds, 95% t-interval."""
    per = []
    for (s, seed), grp in _group(results, lambda r: (r.set, r.seed)).items():
        ops = pd.concat([r.operators for r in grp if not r.operators.empty] or [pd.DataFrame(
            columns=["operator", "edits", "accepted", "improved", "proposals"])])
        for op in ab.sets[s]:
            o = ops[ops["operator"] == op]
            edits, acc = int(o["edits"].sum()), int(o["accepted"].sum())
            per.append({"set": s, "seed": seed, "operator": op,
                        "proposals": int(o["proposals"].sum()), "edits": edits,
                        "accepted": acc, "improved": int(o["improved"].sum()),
                        "acceptance_rate": acc / edits if edits else float("nan"),
                        "improvement_rate": int(o["improved"].sum()) / edits if edits
                        else float("nan")})
    per = pd.DataFrame(per)
    rows = []
    for s in ab.sets:
        for op in ab.sets[s]:
            g = per[(per["set"] == s) & (per["operator"] == op)] if not per.empty else per
            row = {"set": s, "operator": op}
            for k in ("proposals", "edits", "accepted", "improved"):
                row[k] = int(g[k].sum()) if len(g) else 0
            for m in ("acceptance_rate", "improvement_rate"):
                mean, lo, hi, _ = t_interval(g[m] if len(g) else [])
                row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi}
            rows.append(row)
    return pd.DataFrame(rows)


def kernels_table(ab: AblationConfig, results: list[CellResult]) -> pd.DataFrame:
    """Mean best speedup over seeds, kernel × set."""
    df = cells_table(results)
    if df.empty:
        return pd.DataFrame(columns=["kernel", *ab.sets])
    t = df.pivot_table(index="kernel", columns="set", values="best_speedup", aggfunc="mean")
    return t.reindex(index=[k for k in ab.kernels if k in t.index],
                     columns=[s for s in ab.sets if s in t.columns]).reset_index()


def _group(results, key) -> dict:
    out: dict = {}
    for r in results:
        out.setdefault(key(r), []).append(r)
    return out


# -- markdown ----------------------------------------------------------------------------

def _fmt(v, digits: int = 3) -> str:
    if isinstance(v, (float, np.floating)):
        return "–" if not math.isfinite(v) else f"{v:.{digits}f}"
    return str(v)


def _with_interval(df: pd.DataFrame, metrics, digits: dict) -> pd.DataFrame:
    """``m``, ``m_lo``, ``m_hi`` columns folded into one ``mean [lo, hi]`` text column."""
    out = df.copy()
    for m in metrics:
        d = digits.get(m, 3)
        out[m] = [_fmt(a, d) if not math.isfinite(lo) else
                  f"{_fmt(a, d)} [{_fmt(lo, d)}, {_fmt(hi, d)}]"
                  for a, lo, hi in zip(df[m], df[f"{m}_lo"], df[f"{m}_hi"])]
        out = out.drop(columns=[f"{m}_lo", f"{m}_hi"])
    return out


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table (pandas' own needs the tabulate package)."""
    if df.empty:
        return "(no rows)\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v, digits).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def render_markdown(ab: AblationConfig, summary: pd.DataFrame, operators: pd.DataFrame,
                    kernels: pd.DataFrame) -> str:
    label = summary["timing"].iloc[0] if len(summary) else "-"
    digits = {"frac_improved": 2, "acceptance_rate": 2, "evals_to_95": 1,
              "llm_dollars_per_improvement": 4, "geomean_speedup": 4}
    show = _with_interval(summary, METRICS, digits).drop(columns=["timing"])
    ops = _with_interval(operators, ("acceptance_rate", "improvement_rate"), {})
    budget = ", ".join(f"{k} {v}" for k, v in (("evaluations", ab.evaluations),
                                              ("wall_seconds", ab.wall_seconds),
                                              ("llm_dollars", ab.llm_dollars)) if v is not None)
    legend = ("Each value: mean over seeds [95% Student-t interval over seeds, "
              "mean ± t(0.975, n−1)·s/√n]. geomean_speedup: geometric mean over kernels of the "
              "best speedup; frac_improved: kernels with best > 1; acceptance_rate: equal / "
              "edits; evals_to_95: fresh evaluations until the best reached "
              f"{GAIN_FRACTION:.0%} of the final gain (kernels that improved); "
              "llm_dollars_per_improvement: LLM spend / candidates equal and faster than "
              "their parent.")
    return "\n".join([
        f"# Ablation {ab.name}",
        "",
        (f"{len(ab.kernels)} kernels ({ab.size}), seeds {list(ab.seeds)}, per cell: {budget}. "
         f"Speedups are **{label}**."),
        "",
        legend,
        "",
        "## Operator sets",
        "",
        markdown_table(show, 3),
        "## Operators",
        "",
        markdown_table(ops, 3),
        f"## Best speedup per kernel (mean over seeds, {label})",
        "",
        markdown_table(kernels, 4),
    ])
