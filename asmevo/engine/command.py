"""``asmevo run | resume | report | best``: the search, from config to exported K1.

Wired into :mod:`asmevo.cli` through ``add_parser(subparsers)``.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from asmevo.archive.store import ArchiveError


def open_engine(run, hooks=()):
    """An :class:`~asmevo.engine.engine.Engine` on an open run, with its pool."""
    from asmevo.engine.engine import Engine
    from asmevo.engine.parallel import make_pool

    pool = make_pool(run.config.parallel, warm=run.evaluator)
    return Engine(run.config, run.archive, run.blobs, run.evaluator, pool, run_id=run.run_id,
                  hooks=tuple(hooks))


def search(run, hooks=()) -> str:
    """Run the engine on an open run until it stops; returns the stop reason.

    The one place a search is driven (``run``, ``resume`` and every ablation cell):
    a Ctrl-C marks the run interrupted before it propagates, and the pool's workers
    are shut down however the search ends.
    """
    engine = open_engine(run, hooks)
    try:
        return engine.run()
    except KeyboardInterrupt:
        run.archive.set_run_status(run.run_id, "interrupted", "KeyboardInterrupt")
        raise
    finally:
        engine.pool.close()


def _drive(run, *, quiet: bool = False) -> int:
    from asmevo.engine.preflight import UnusableSetup
    from asmevo.engine.progress import Progress

    try:
        search(run, () if quiet else (Progress(run.config),))
    except UnusableSetup as exc:     # one line, nonzero; the run is kept
        raise UnusableSetup(f"{exc.message} (the run is kept: fix this, then "
                            f"`asmevo resume {run.path}`)") from None
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from asmevo.engine.config import load_config
    from asmevo.engine.rundir import create_run

    config = load_config(args.config)
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / config.run.name
    with create_run(config, run_dir) as run:
        print(f"run directory: {run_dir}")
        return _drive(run, quiet=args.quiet)


def _cmd_resume(args: argparse.Namespace) -> int:
    from asmevo.engine.rundir import open_run

    with open_run(args.run_dir) as run:
        row = run.archive.run(run.run_id)
        if row["status"] == "finished":
            print(f"run already finished ({row['stop_reason']}); nothing to do")
            return 0
        return _drive(run, quiet=args.quiet)


def _cmd_report(args: argparse.Namespace) -> int:
    from asmevo.engine.report import build_report
    from asmevo.engine.rundir import open_run

    with open_run(args.run_dir, lock=False, evaluator=False) as run:
        out = Path(args.out) if args.out else run.path / "report"
        rep = build_report(run.archive, None if args.no_plots else out, run.run_id)
        print(rep.render())
    return 0


def _cmd_best(args: argparse.Namespace) -> int:
    from asmevo.archive import queries
    from asmevo.verdict import coverage_label, coverage_of
    from asmevo.engine.rundir import open_run

    with open_run(args.run_dir, lock=False, evaluator=False) as run:
        best = queries.best_individual(run.archive, run.run_id)
        sha = best["code_sha256"]
        try:
            data = run.blobs.get(sha)
        except ArchiveError as exc:
            data = _rebuild(run, best, exc)
        lineage = queries.lineage(run.archive, best["ind_id"], run.run_id)
        row = run.archive.run(run.run_id)
        sidecar = {
            "run": row["name"], "kernel": row["kernel"], "k0_sha256": row["k0_sha256"],
            "code_sha256": sha, "individual": best["ind_id"],
            "speedup": float(best["fitness"]), "timing_label": best["label"],
            "device": best["device"],
            "timing": json.loads(best["timing"]) if best["timing"] else None,
            "verdict": {"status": best["status"], "reason": best["reason"],
                        "details": json.loads(best["details"])},
            "coverage": coverage_of(best["details"]),
            "coverage_label": coverage_label(best["details"]),
            "edits": json.loads(best["edits"]),
            "lineage": json.loads(lineage.to_json(orient="records")),
        }
        out = Path(args.out)
        _atomic_write(out, data)
        _atomic_write(out.with_name(out.name + ".json"),
                      (json.dumps(sidecar, indent=2) + "\n").encode())
        print(f"{out}: {best['fitness']:.4f}x ({best['label']}, {best['device']}), "
              f"individual {best['ind_id']}, {int(best['n_edits'])} edits; sidecar "
              f"{out.name}.json")
    return 0


def _rebuild(run, best, why: ArchiveError) -> bytes:
    """A lost or damaged blob: rebuild the candidate from its edits, check its hash."""
    import hashlib

    from asmevo.edits import edits_from_json
    from asmevo.engine.evaluator import make_evaluator

    print(f"note: {why}; rebuilding {best['ind_id']} from its edits")
    data, verdict = make_evaluator(run.config).build(edits_from_json(best["edits"]))
    if data is None or hashlib.sha256(data).hexdigest() != best["code_sha256"]:
        raise ArchiveError(f"cannot rebuild {best['ind_id']} to its recorded hash "
                           f"({verdict or 'different bytes'})", path=str(run.path)) from why
    run.blobs.put(data)
    return data


def _atomic_write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise ArchiveError(f"cannot write ({exc.strerror})", path=str(path)) from exc


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="start an evolutionary search from a config")
    p.add_argument("config", help="run config (TOML)")
    p.add_argument("--run-dir", help="where the archive goes (default runs/<run.name>)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("resume", help="continue a run from its last committed generation")
    p.add_argument("run_dir")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_resume)

    p = sub.add_parser("report", help="tables and plots of a run")
    p.add_argument("run_dir")
    p.add_argument("--out", help="folder for PNGs and CSVs (default RUN_DIR/report)")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("best", help="export the best code object with a JSON sidecar")
    p.add_argument("run_dir")
    p.add_argument("--out", required=True, help="path of the exported code object")
    p.set_defaults(func=_cmd_best)
