"""``asmevo report``: tables and plots of one run, read from its archive only.

Tables (pandas): best per kernel, per-operator acceptance and improvement
rates, lineage of the best. Plots (matplotlib, Agg): best speedup against
evaluations, per island and per operator. matplotlib is the ``plot`` extra:
without it the report is the tables and CSVs plus one line that says how to
get the plots (a report is still useful on a headless box with a minimal
install; plots are not worth a failed command).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from asmevo.archive import queries
from asmevo.archive.store import Archive, ArchiveError
from asmevo.verdict import coverage_of
from asmevo.engine.outcomes import refusal_reasons


PLOT_HINT = ("plots skipped: matplotlib is not installed "
             "(pip install 'asmevo[plot]', or pip install matplotlib)")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or None when matplotlib is not
    installed (a matplotlib that is installed but broken still raises)."""
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        if exc.name != "matplotlib":
            raise
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


@dataclass
class Report:
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    plots: list[Path] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        out = []
        for k, v in self.summary.items():
            out.append(f"{k}: {v}")
        for name, df in self.tables.items():
            out.append(f"\n== {name} ==")
            out.append(df.to_string(index=False) if not df.empty else "(none)")
        if self.plots:
            out.append("\nplots: " + ", ".join(str(p) for p in self.plots))
        out.extend(self.notes)
        return "\n".join(out)


def _plot(plt, curve: pd.DataFrame, by: str, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, grp in curve.groupby(by, sort=True):
        ax.step(grp["evaluations"], grp["best"], where="post", label=f"{by} {key}")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best speedup over K0")
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def coverage_table(inds: pd.DataFrame) -> pd.DataFrame:
    """Per operator: equal candidates, how many the prover proved (the rest are
    tested), how many it refuted (docs/prover.md)."""
    if inds.empty:
        return pd.DataFrame()
    first = inds[inds["first"]]
    eq = first[first["status"] == "equal"]
    proved = eq["details"].map(coverage_of) == "proved"
    rows = []
    for op in sorted(set(first["operator"])):
        sel = eq["operator"] == op
        rows.append({"operator": op, "equal": int(sel.sum()), "proved": int(proved[sel].sum()),
                     "refuted": int(((first["operator"] == op) &
                                     (first["status"] == "refuted")).sum())})
    return pd.DataFrame(rows)


def refusals_table(archive: Archive, run_id: int) -> pd.DataFrame:
    """One row per (operator, reason): the operator's proposals without an edit, then its
    most frequent reasons with their counts (the first row of an operator names it)."""
    rows = []
    for op in refusal_reasons(archive.conn, run_id):
        for k, r in enumerate(op["reasons"]):
            rows.append({"operator": op["operator"] if k == 0 else "",
                         "no edit": op["without_edit"] if k == 0 else "",
                         "count": r["count"], "reason": r["reason"]})
    return pd.DataFrame(rows, columns=["operator", "no edit", "count", "reason"])


def build_report(archive: Archive, out_dir: Path | None, run_id: int | None = None) -> Report:
    run = archive.run(run_id)
    rid = int(run["run_id"])
    rep = Report()
    inds = queries.individuals(archive, rid)
    last = archive.last_checkpoint(rid)
    label = inds.loc[inds["status"] == "equal", "label"].dropna().unique().tolist()
    rep.summary = {
        "run": f"{run['name']} (kernel {run['kernel']}, K0 {run['k0_sha256'][:12]}, "
               f"seed {run['seed']})",
        "status": f"{run['status']}{' (' + run['stop_reason'] + ')' if run['stop_reason'] else ''}",
        "generations committed": last[0] if last else "none",
        "individuals": len(inds),
        "fresh evaluations": int(inds["first"].sum()),
        "timing": ", ".join(label) or "-",
    }
    if last:
        rep.summary["spent"] = json.dumps(last[1]["spent"])
    rep.tables["best per kernel"] = queries.best_per_kernel(archive)
    rep.tables["operators"] = queries.operator_stats(archive, rid)
    cov = coverage_table(inds)
    if not cov.empty:
        rep.summary["coverage"] = (f"{int(cov['proved'].sum())} of {int(cov['equal'].sum())} "
                                   f"equal candidates proved, the rest tested; "
                                   f"{int(cov['refuted'].sum())} refuted")
        rep.tables["coverage per operator (proved or tested)"] = cov
    rep.tables["why operators proposed nothing"] = refusals_table(archive, rid)
    per_worker = queries.workers(archive, rid)
    if not per_worker.empty:
        rep.tables["evaluations per Dask worker"] = per_worker
    spend = queries.llm_spend(archive, rid)
    if not spend.empty:
        rep.tables["LLM spend (cost per accepted improvement)"] = spend
    models = queries.llm_models(archive, rid)
    if not models.empty:
        rep.tables["LLM models (what each model earned)"] = models
    convs = queries.conversations(archive, rid)
    if not convs.empty:
        rep.tables["LLM conversations (spend per conversation)"] = convs[
            ["generation", "island", "slot", "operator", "turns", "tries", "tries_equal",
             "best_try", "tokens", "cost", "outcome", "status", "fitness", "improved"]]
    try:
        best = queries.best_individual(archive, rid)
        rep.tables["lineage of the best"] = queries.lineage(archive, best["ind_id"], rid)[
            ["ind_id", "generation", "island", "operator", "status", "fitness", "edit"]]
    except ArchiveError:
        rep.tables["lineage of the best"] = pd.DataFrame()
    if out_dir is not None and not inds.empty:
        out_dir.mkdir(parents=True, exist_ok=True)
        plt = pyplot()
        if plt is None:
            rep.notes.append(PLOT_HINT)
        else:
            rep.plots.append(_plot(plt, queries.best_curve(archive, "island", rid), "island",
                                   f"{run['name']}: best per island",
                                   out_dir / "best_by_island.png"))
            by_op = queries.best_curve(archive, "operator", rid)
            if not by_op.empty:
                rep.plots.append(_plot(plt, by_op, "operator", f"{run['name']}: best per operator",
                                       out_dir / "best_by_operator.png"))
        for name, df in rep.tables.items():
            df.to_csv(out_dir / f"{name.replace(' ', '_')}.csv", index=False)
    return rep
