#!/usr/bin/env python3
"""The prover on the accepted edits of a search: how many it proves, and how fast.

    python experiments/bench_proof.py --set naive,corpus --evaluations 24 --jobs 2 \\
        --results runs/bench_proof
    python experiments/bench_proof.py --semantics            # the instruction check alone

For every kernel of the sets, one engine search as ``bench_search.py`` runs it (every
rule operator, weight 1, crossovers at rate 0.2, candidates verified and timed on the
emulator) but without the prove stage: the differential run alone decides what is
accepted. Then every accepted edit (a fresh equal candidate and the parent it extends:
for a crossover the parent whose edit list it continues) is proved against its parent
(``asmevo.prove.validate.prove_programs``), timed here. An edit is *straight-line* when
it differs from its parent in one region inside one basic block; *blocks* when in
several; *loop* when it rewrites a loop (unroll); *structural* otherwise.

Prints per kernel the accepted edits by operator and outcome, every refutation with
its counterexample, the reasons of the unknowns, and ``name=value`` lines:
``edits``, ``straight_line``, ``proved``, ``proved_share``, ``straight_line_proved_share``,
``refuted``, ``median_seconds``, ``p90_seconds``, and the instruction check's
``semantics_forms``, ``semantics_mnemonics``, ``semantics_disagreements`` (every form
the proofs used, checked against the emulator; with ``--semantics``: every form of every
mnemonic the prover models, from the corpus and from templates).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import bench_search  # noqa: E402  (the searches are bench_search's)

_SEARCH_CONFIG = bench_search.config_text


def config_text(kernel_dir, seed, ops, args) -> str:
    """bench_search's run config, without the prove stage (the bench proves afterwards)."""
    return _SEARCH_CONFIG(kernel_dir, seed, ops, args).replace("[run]\n", '[run]\nproof = "off"\n',
                                                               1)


bench_search.config_text = config_text


def accepted_edits(run_dir: Path) -> tuple[list[dict], object]:
    """(each fresh equal candidate with the edits of its parent, the run's config)."""
    from asmevo.archive import queries
    from asmevo.engine.rundir import open_run

    with open_run(run_dir, lock=False, evaluator=False) as run:
        inds = queries.individuals(run.archive, run.run_id)
        config = run.config
    edits = dict(zip(inds["ind_id"], inds["edits"].map(json.loads)))
    out = []
    for _, r in inds[inds["first"] & (inds["status"] == "equal")].iterrows():
        child = edits[r["ind_id"]]
        if not child:
            continue
        parent = []
        for p in r["parents"]:
            e = edits.get(p, [])
            if len(e) < len(child) and child[:len(e)] == e and len(e) >= len(parent):
                parent = e
        out.append({"ind": r["ind_id"], "operator": r["operator"], "parent": parent,
                    "child": child})
    return out, config


def prove_edits(kernel_dir: Path, rows: list[dict]) -> list[dict]:
    from asmevo.edits import Edit
    from asmevo.prove.validate import prove_programs
    from asmevo.verify.evaluate import EvalContext, k0_state

    st = k0_state(EvalContext(spec_path=str(kernel_dir), size="small", timing="none"))
    target, kernel = st.target, st.spec.kernel
    programs: dict[tuple, object] = {(): st.program}

    def program(edits: list) -> object:
        key = tuple(json.dumps(e, sort_keys=True) for e in edits)
        got = programs.get(key)
        if got is None:
            got = programs[key] = target.apply_edits(program(edits[:-1]),
                                                     (Edit.from_json(edits[-1]),))
        return got

    out = []
    for r in rows:
        a, b = program(r["parent"]), program(r["child"])
        t0 = time.perf_counter()
        try:
            p = prove_programs(a, b, kernel, block=st.spec.block)
        except Exception as exc:        # counted and printed as an error, not hidden
            out.append({"kernel": kernel_dir.name, "operator": r["operator"],
                        "status": "error", "kind": "-", "reason": f"{type(exc).__name__}: "
                        f"{exc}", "seconds": time.perf_counter() - t0, "counterexample": None})
            continue
        out.append({"kernel": kernel_dir.name, "operator": r["operator"], "status": p.status,
                    "kind": p.kind, "reason": p.reason, "seconds": time.perf_counter() - t0,
                    "counterexample": p.counterexample})
    return out


def run_set(dirs, args, work: Path) -> list[dict]:
    from bench_operators import rule_operators
    ops = {name: 1.0 for name in rule_operators()}
    results = []
    for d in dirs:
        done = work / f"{d.name}.proof.json"
        if done.exists():
            got = json.loads(done.read_text())
        else:
            if not (args.reprove and (work / d.name / "seed1" / "archive.db").exists()):
                bench_search.search(d, 1, ops, args, work)
            rows, _ = accepted_edits(work / d.name / "seed1")
            got = prove_edits(d, rows)
            tmp = done.with_suffix(".tmp")
            tmp.write_text(json.dumps(got, default=str))
            tmp.replace(done)
        report_kernel(d.name, got)
        results += got
    return results


def report_kernel(name: str, rows: list[dict]) -> None:
    c = Counter((r["operator"], r["kind"], r["status"]) for r in rows)
    print(f"{name:24s} {len(rows):3d} accepted edits: " +
          ", ".join(f"{op}/{kind}/{st} {n}" for (op, kind, st), n in sorted(c.items())),
          flush=True)
    for r in rows:
        if r["status"] == "refuted":
            print(f"    REFUTED {r['operator']}: {r['reason']} {json.dumps(r['counterexample'])}")
        elif r["status"] == "error":
            print(f"    ERROR {r['operator']}: {r['reason']}")


def summary(rows: list[dict]) -> None:
    straight = [r for r in rows if r["kind"] in ("straight-line", "identical")]
    proved = [r for r in rows if r["status"] == "proved"]
    secs = sorted(r["seconds"] for r in rows)
    reasons = Counter(r["reason"][:110] for r in rows if r["status"] == "unknown")
    kinds = Counter((r["kind"], r["status"]) for r in rows)
    print("\noutcome by kind:")
    for (k, s), n in sorted(kinds.items()):
        print(f"  {k:14s} {s:8s} {n}")
    print("unknown, by reason:")
    for why, n in reasons.most_common(12):
        print(f"  {n:4d}  {why}")
    n = max(1, len(rows))
    print(f"edits={len(rows)}")
    print(f"straight_line={len(straight)}")
    print(f"proved={len(proved)}")
    print(f"proved_share={len(proved) / n:.3f}")
    sp = sum(r["status"] == "proved" for r in straight)
    print(f"straight_line_proved_share={sp / max(1, len(straight)):.3f}")
    print(f"loop_edits={sum(r['kind'] == 'loop' for r in rows)}")
    print(f"loop_proved={sum(r['kind'] == 'loop' and r['status'] == 'proved' for r in rows)}")
    print(f"refuted={sum(r['status'] == 'refuted' for r in rows)}")
    print(f"errors={sum(r['status'] == 'error' for r in rows)}")
    print(f"median_seconds={statistics.median(secs) if secs else 0:.3f}")
    print(f"p90_seconds={secs[math.ceil(0.9 * len(secs)) - 1] if secs else 0:.3f}")   # nearest rank


def semantics_summary(full: bool, cases: int = 12) -> None:
    """The instruction check: every form the proofs used (or, ``full``, every form
    :mod:`asmevo.prove.forms` generates, ``cases`` states each), against the emulator."""
    from asmevo.prove import check
    if full:
        from asmevo.prove.forms import all_forms
        errors = 0
        for text in all_forms(ROOT / "experiments"):
            try:
                check.trusted(text, check.DEFAULT_MODE, "gfx942", cases=cases)
            except Exception as exc:        # counted and named, the rest still checked
                errors += 1
                print(f"  ERROR {text}: {type(exc).__name__}: {exc}"[:200], flush=True)
        print(f"semantics_errors={errors}")
    outs = list(check._TRUSTED.values())
    if not outs:
        print("semantics: no form was checked in this process (every proof was read from "
              "--results); --semantics checks them all")
        return
    used = [o for o in outs if o.refused is None]
    bad = [o for o in used if o.disagreements]
    mnemonics = {o.text.split()[0] for o in used}
    print(f"semantics_forms={len(used)}")
    print(f"semantics_exact_forms={sum(o.kind == 'exact' for o in used)}")
    print(f"semantics_opaque_forms={sum(o.kind == 'opaque' for o in used)}")
    print(f"semantics_mnemonics={len(mnemonics)}")
    print(f"semantics_states={sum(o.cases - o.skipped for o in used)}")
    print(f"semantics_skipped_states={sum(o.skipped for o in used)}")
    print(f"semantics_refused_forms={len(outs) - len(used)}")
    print(f"semantics_disagreements={len(bad)}")
    for o in bad:
        print(f"  DISAGREES {o.text}: {o.disagreements[0]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="naive,corpus", help="comma-separated: naive, corpus")
    ap.add_argument("--evaluations", type=int, default=24, help="fresh evaluations per search")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kernels", nargs="+",
                    help="only these kernels (NAME, or SET/NAME: only that set's)")
    ap.add_argument("--search-wall", type=float, default=900)
    ap.add_argument("--results", help="keep runs and per-kernel results here (resumable)")
    ap.add_argument("--reprove", action="store_true",
                    help="prove the accepted edits of searches already under --results as "
                    "they are (made before a spec or the verifier changed), not searching "
                    "them again; a kernel without one is searched")
    ap.add_argument("--semantics", action="store_true",
                    help="check every form of every modeled mnemonic against the emulator")
    ap.add_argument("--cases", type=int, default=12,
                    help="--semantics: random and edge states per form (default 12)")
    args = ap.parse_args(argv)
    if args.cases < 1 or args.evaluations < 1 or args.jobs < 1:
        print("bench_proof: --cases, --evaluations and --jobs must be >= 1", file=sys.stderr)
        return 2
    os.environ.setdefault("ASMEVO_CACHE_DIR", tempfile.mkdtemp(prefix="asmevo-bench-proof-"))
    from asmevo.prove.z3env import available, missing_reason
    if not available():
        print(f"bench_proof: {missing_reason()}", file=sys.stderr)
        return 2
    if args.semantics:
        semantics_summary(True, args.cases)
        return 0
    # bench_search.search's settings: the search size, its finalist (no re-timing here)
    args.size, args.search_timing_size, args.finalists = "small", None, 1
    args.occupancy_finalists = 0
    t0 = time.time()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-proof-") as tmp:
        work = Path(args.results) if args.results else Path(tmp)
        for which in args.set.split(","):
            dirs = bench_search.kernel_dirs(which)
            if args.kernels:        # a name, or SET/NAME for the one of that set
                dirs = [d for d in dirs if d.name in args.kernels
                        or f"{which}/{d.name}" in args.kernels]
            sub = work / which
            sub.mkdir(parents=True, exist_ok=True)
            rows += run_set(dirs, args, sub)
    summary(rows)
    semantics_summary(False)
    print(f"wall_seconds={time.time() - t0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
