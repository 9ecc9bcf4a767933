"""Best speedup against evaluations, one line per operator set (matplotlib, Agg).

A set's line at ``e`` evaluations: per seed, the geometric mean over kernels of
each cell's best after ``e`` fresh evaluations (a cell that stopped earlier
keeps its final best); then the mean over seeds, with the 95% t-interval band.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from asmevo.ablate.summary import CellResult, t975
from asmevo.engine.report import pyplot


def set_curves(results: list[CellResult], sets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """set -> (per-seed geomean curves [seeds × evaluations+1], evaluation axis)."""
    out = {}
    for s in sets:
        cells = [r for r in results if r.set == s]
        if not cells:
            continue
        length = max(len(r.curve) for r in cells)
        per_seed = []
        for seed in sorted({r.seed for r in cells}):
            curves = [np.pad(r.curve, (0, length - len(r.curve)), mode="edge")
                      for r in cells if r.seed == seed]
            per_seed.append(np.exp(np.log(np.vstack(curves)).mean(axis=0)))
        out[s] = (np.vstack(per_seed), np.arange(length))
    return out


def plot_best_vs_evaluations(results: list[CellResult], sets, title: str, label: str,
                             path: Path) -> Path | None:
    """The plot at ``path``; None (nothing written) when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for s, (curves, x) in set_curves(results, sets).items():
        mean = curves.mean(axis=0)
        line, = ax.step(x, mean, where="post", label=f"{s} ({len(curves)} seeds)")
        ax.plot(x[-1:], mean[-1:], "o", ms=3, color=line.get_color())   # where the cells stop
        if len(curves) > 1:
            half = t975(len(curves) - 1) * curves.std(axis=0, ddof=1) / np.sqrt(len(curves))
            ax.fill_between(x, mean - half, mean + half, step="post", alpha=0.15,
                            color=line.get_color(), linewidth=0)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("fresh evaluations per cell")
    ax.set_ylabel(f"geomean best speedup over kernels ({label})")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
