#!/usr/bin/env python3
"""How many deliberately wrong candidates does the verifier accept?

    python experiments/bench_false_accepts.py [--kernels softmax,naive/sum_rows]
        [--classes remainder,alias,...] [--sets corpus,naive] [--targets gfx942,gfx90a]
        [--size small]

For every kernel of the corpus (``experiments/kernels``) and of the naive set
(``experiments/kernels_naive``, named ``naive/<kernel>``), every target and every
class of ``tests/verify/wrong/``, the class's candidate is built through the
project's own edit path (``asmevo.verify.evaluate.build_candidate``: edits, the
static gate, llvm-mc + ld.lld). The classes: those issue 15 found (a constant only
a row of -inf reaches, a branch right only at the spec's scalar value, a dropped
canonicalize, a read past the kernarg segment, uninitialised VGPR and LDS reads;
run on the corpus, as before) and those of issue 39, each wrong only at a launch
other than the size under check (a broken unroll remainder, a partial tile, a
grid dimension, a scalar path, overlapping buffers, a workgroup order, lanes of a
wave storing to one address, a special-value layout, a 24-bit index multiply).

A candidate counts as *wrong* only when its witness (K0 and the candidate run
directly on the emulator, outside the verifier: at a family member, a workgroup
order, an overlap of buffers, an input layout, or with other garbage in undefined
state) shows it is not K0's function; candidates the gate or the build refuse,
and ones the witness finds equal to K0, are listed but not counted (an
``index_overflow`` candidate no family launch reaches is listed as
``unreachable``; one the emulator cannot run where K0 runs, with no other
difference, as ``inconclusive``). Each wrong candidate then goes through the full verifier
(``evaluate_candidate``, timing off, launch family on).

Prints one line per candidate and a per-class table; ``equal_at_small`` counts the
wrong candidates the verifier did not reject at the size under check's outputs
(it rejected them at a family member, a workgroup order, an overlap, or as lanes
storing to one address, or accepted them): only issue 39's checks catch those.
Ends with ``kernels=`` (distinct kernels with a wrong candidate), ``wrong=``,
``accepted=`` (wrong candidates the verifier called equal) and ``equal_at_small=``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETS = {"corpus": ROOT / "experiments" / "kernels",
        "naive": ROOT / "experiments" / "kernels_naive"}


def kernel_dirs(sets: list[str], only: str | None) -> list[tuple[str, Path, str]]:
    """(name, folder, set) of every kernel asked for: corpus names plain, naive ones
    as ``naive/<name>``."""
    out = []
    for s in sets:
        for p in sorted(SETS[s].glob("*/spec.toml")):
            name = p.parent.name if s == "corpus" else f"naive/{p.parent.name}"
            out.append((name, p.parent, s))
    if only:
        want = [k for k in only.split(",") if k]
        unknown = sorted(set(want) - {n for n, _, _ in out})
        if unknown:
            sys.exit(f"unknown kernel(s) {', '.join(unknown)}")
        out = [x for x in out if x[0] in want]
    return out


def caught_at_small(v) -> bool:
    """Whether the verifier rejected at the size under check's outputs (not at a family
    member, an order, an overlap, nor as lanes storing to one address)."""
    return not v.equal and "member" not in v.details and v.status != "unspecified"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", help="comma-separated kernels (default: all of --sets)")
    ap.add_argument("--classes", help="comma-separated classes (default: all)")
    ap.add_argument("--sets", default="corpus,naive",
                    help="comma-separated: corpus and/or naive (default both); the classes "
                         "of issue 15 run on the corpus only")
    ap.add_argument("--targets", default="gfx942",
                    help="comma-separated: gfx942 and/or gfx90a (default gfx942)")
    ap.add_argument("--size", default="small")
    args = ap.parse_args()
    os.environ.setdefault("ASMEVO_CACHE_DIR", tempfile.mkdtemp(prefix="asmevo-bench-"))

    from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate
    from asmevo.launch.spec import load_spec
    from tests.verify.wrong import CLASSES, CLASSIC, build_wrong, witnessed

    kernels = kernel_dirs([s for s in args.sets.split(",") if s], args.kernels)
    classes = args.classes.split(",") if args.classes else list(CLASSES)
    unknown = sorted(set(classes) - set(CLASSES))
    if unknown:
        sys.exit(f"unknown class(es) {', '.join(unknown)}; known: {', '.join(CLASSES)}")
    counts: dict[str, Counter] = defaultdict(Counter)
    wrong_kernels: dict[str, set] = defaultdict(set)
    accepted: list[str] = []
    t0 = time.perf_counter()
    for name, spec_path, kset in kernels:
        spec = load_spec(spec_path, args.size)
        for target in args.targets.split(","):
            isa = None if target == "gfx942" else target
            if isa is not None and isa not in spec.code_objects:
                continue
            ctx = EvalContext(spec_path=str(spec_path), size=args.size, timing="none", isa=isa)
            for cls in classes:
                if cls in CLASSIC and kset != "corpus":
                    continue
                where = f"{name}/{target}"
                t = time.perf_counter()
                w = build_wrong(ctx, cls)
                if w is None:
                    continue
                counts[cls]["built"] += 1
                data, refused = build_candidate(ctx, w.edits)
                if data is None:
                    counts[cls]["refused_before_running"] += 1
                    print(f"{where:32s} {cls:18s} refused ({refused.status}) {w.note}",
                          flush=True)
                    continue
                notes: list[str] = []
                why = witnessed(ctx, w, data, notes)
                if not why:
                    kind = "unreachable" if cls == "index_overflow" else \
                        "inconclusive" if notes else "not_wrong"
                    counts[cls][kind] += 1
                    text = {"unreachable": "unreachable (no family launch the witness runs "
                                           "shows it)",
                            "inconclusive": f"inconclusive ({notes[0] if notes else ''})",
                            "not_wrong": "not wrong (the witness finds it equal)"}[kind]
                    print(f"{where:32s} {cls:18s} {text} {w.note}", flush=True)
                    continue
                v = evaluate_candidate(ctx, w.edits).verdict
                counts[cls]["wrong"] += 1
                wrong_kernels[cls].add(name)
                if not caught_at_small(v):
                    counts[cls]["equal_at_small"] += 1
                if v.equal:
                    counts[cls]["accepted"] += 1
                    accepted.append(f"{where} {cls}: {w.note} ({why})")
                else:
                    counts[cls]["rejected"] += 1
                print(f"{where:32s} {cls:18s} {'ACCEPTED' if v.equal else v.status:16s} "
                      f"{time.perf_counter() - t:5.1f}s {w.note}; {why} | "
                      f"{' '.join(v.reason.split())[:200]}", flush=True)
    print()
    print(f"{'class':19s} built refused not_wrong inconclusive unreachable wrong rejected "
          f"accepted equal_at_small kernels")
    for cls in classes:
        c = counts[cls]
        print(f"{cls:19s} {c['built']:5d} {c['refused_before_running']:7d} {c['not_wrong']:9d} "
              f"{c['inconclusive']:12d} {c['unreachable']:11d} {c['wrong']:5d} "
              f"{c['rejected']:8d} {c['accepted']:8d} {c['equal_at_small']:14d} "
              f"{len(wrong_kernels[cls]):7d}")
    for line in accepted:
        print(f"accepted: {line}")
    missing = [c for c in classes if not counts[c]["wrong"]]
    print(f"seconds={time.perf_counter() - t0:.0f}")
    print(f"kernels={len(set().union(*wrong_kernels.values()) if wrong_kernels else ())}")
    print(f"classes={sum(1 for c in classes if counts[c]['wrong'])} of {len(classes)}"
          + (f" (none wrong: {', '.join(missing)})" if missing else ""))
    print(f"wrong={sum(c['wrong'] for c in counts.values())}")
    print(f"accepted={sum(c['accepted'] for c in counts.values())}")
    print(f"equal_at_small={sum(c['equal_at_small'] for c in counts.values())}")
    print(f"unreachable={sum(c['unreachable'] for c in counts.values())}")


if __name__ == "__main__":
    main()
