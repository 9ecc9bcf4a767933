#!/usr/bin/env python3
"""Does the prover refute the deliberately wrong candidates?

    python experiments/prove_wrong.py [--sets corpus,naive] [--kernels softmax,naive/saxpy]
                                      [--classes ...] [--size small]

For every kernel of ``bench_false_accepts.py``'s sets (corpus and naive) and every
class of ``tests/verify/wrong.py`` (the candidates ``bench_false_accepts.py`` builds), the class's candidate is applied to K0's recovered
program and proved against it (:func:`prove_wrong`). A straight-line one (its
difference inside one basic block) must come out ``refuted``, with a counterexample
the emulator reproduced (``replayed``); the others are listed with what the prover
said. Prints one line per candidate and ``straight_line=``, ``refuted=``,
``replayed=``, ``witness_equal=`` (straight-line ones not refuted whose witness, run
outside the verifier as bench_false_accepts runs it, shows no difference either: not
wrong at all) and ``not_refuted=`` (the other straight-line ones that were not).

:func:`prove_wrong` takes any :class:`tests.verify.wrong.Wrong` (a class added later
too) and an :class:`asmevo.verify.evaluate.EvalContext`.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def prove_wrong(ctx, wrong) -> dict:
    """The prover on one wrong candidate: its status, the kind of difference, the
    reason, and the counterexample (``replayed``: the emulator reproduced it)."""
    from asmevo.prove.validate import prove_programs
    from asmevo.verdict import Verdict
    from asmevo.verify.evaluate import k0_state
    st = k0_state(ctx)
    cand = st.target.apply(st.program, wrong.edits)
    if isinstance(cand, Verdict):
        return {"class": wrong.cls, "status": "not applied", "kind": "-",
                "reason": str(cand), "replayed": False, "counterexample": None}
    p = prove_programs(st.program, cand, st.spec.kernel, block=st.spec.block)
    cex = p.counterexample or {}
    return {"class": wrong.cls, "status": p.status, "kind": p.kind, "reason": p.reason,
            "replayed": bool(cex.get("replayed")), "counterexample": p.counterexample}


def _witness_shows(ctx, wrong) -> bool:
    """Whether the class's witness (bench_false_accepts's, run outside the verifier)
    shows the candidate differ from K0: a candidate it does not is not wrong here."""
    from asmevo.verify.evaluate import build_candidate
    from tests.verify.wrong import witnessed
    data, _ = build_candidate(ctx, wrong.edits)
    return data is not None and bool(witnessed(ctx, wrong, data, []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="corpus,naive",
                    help="comma-separated: corpus and/or naive (default both, as bench_false_accepts)")
    ap.add_argument("--kernels", help="comma-separated kernels, naive ones as naive/<name> "
                                      "(default: all of --sets)")
    ap.add_argument("--classes", help="comma-separated classes (default: all)")
    ap.add_argument("--size", default="small")
    args = ap.parse_args()
    os.environ.setdefault("ASMEVO_CACHE_DIR", tempfile.mkdtemp(prefix="asmevo-prove-wrong-"))
    from asmevo.verify.evaluate import EvalContext
    from tests.verify.wrong import CLASSES, CLASSIC, build_wrong

    from bench_false_accepts import SETS, kernel_dirs
    sets = [s for s in args.sets.split(",") if s]
    bad = [s for s in sets if s not in SETS]
    every = {name: (path, kset) for name, path, kset in
             kernel_dirs([s for s in sets if s in SETS], None)}
    kernels = [k for k in args.kernels.split(",") if k] if args.kernels else list(every)
    classes = args.classes.split(",") if args.classes else list(CLASSES)
    from asmevo.prove.z3env import available, missing_reason
    bad += [k for k in kernels if k not in every]
    bad += [c for c in classes if c not in CLASSES]
    if bad or not available():
        print(f"prove_wrong: {'unknown set, kernel or class: ' + ', '.join(bad) if bad else missing_reason()}",
              file=sys.stderr)
        return 2
    counts: Counter = Counter()
    for name in kernels:
        path, kset = every[name]
        ctx = EvalContext(spec_path=str(path), size=args.size, timing="none")
        for cls in classes:
            if cls in CLASSIC and kset != "corpus":
                continue        # issue 15's classes run on the corpus only, as bench_false_accepts
            w = build_wrong(ctx, cls)
            if w is None:
                continue
            r = prove_wrong(ctx, w)
            straight = r["kind"] == "straight-line"
            counts["built"] += 1
            counts["straight_line"] += straight
            counts["refuted"] += straight and r["status"] == "refuted"
            counts["replayed"] += straight and r["replayed"]
            if straight and r["status"] != "refuted" and not _witness_shows(ctx, w):
                counts["witness_equal"] += 1        # not wrong here: nothing to refute
                r["reason"] = "(its witness shows no difference either) " + r["reason"]
            else:
                counts["not_refuted"] += straight and r["status"] != "refuted"
            print(f"{name:24s} {cls:17s} {r['kind']:13s} {r['status']:8s} "
                  f"{'replayed' if r['replayed'] else '':8s} {r['reason'][:100]}", flush=True)
    for k in ("built", "straight_line", "refuted", "replayed", "witness_equal", "not_refuted"):
        print(f"{k}={counts[k]}")
    return 0 if counts["not_refuted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
