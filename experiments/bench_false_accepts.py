#!/usr/bin/env python3
"""How many deliberately wrong candidates does the verifier accept?

    python experiments/bench_false_accepts.py [--kernels softmax,row_max] [--classes ...]
                                              [--targets gfx942,gfx90a] [--size small]

For every corpus kernel (and target) and every class of ``tests/verify/wrong.py``
(a constant only a row of -inf reaches, a branch right only at the spec's
scalar value, a dropped canonicalize, a read past the kernarg segment,
uninitialised VGPR and LDS reads), the class's candidate is built through the
project's own edit path (``asmevo.verify.evaluate.build_candidate``: edits, the
static gate, llvm-mc + ld.lld). A candidate counts as *wrong* only when its
witness (K0 and the candidate run directly on the emulator, on inputs the
verifier never sees, or with other garbage in undefined state) shows it is not
K0's function; candidates the gate or the build refuse, and ones the witness
finds equal to K0, are listed but not counted. Each wrong candidate then goes
through the full verifier (``evaluate_candidate``, timing off).

Prints one line per candidate, per-class counts, and ends with ``wrong=`` and
``accepted=`` (wrong candidates the verifier called equal), plus ``kernels=``
(distinct kernels with a wrong candidate).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", help="comma-separated corpus folders (default: all)")
    ap.add_argument("--classes", help="comma-separated classes (default: all)")
    ap.add_argument("--targets", default="gfx942",
                    help="comma-separated: gfx942 and/or gfx90a (default gfx942)")
    ap.add_argument("--size", default="small")
    args = ap.parse_args()
    os.environ.setdefault("ASMEVO_CACHE_DIR", tempfile.mkdtemp(prefix="asmevo-bench-"))

    from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate
    from asmevo.launch.spec import load_spec
    from tests.verify.wrong import CLASSES, build_wrong, witnessed

    kernels = sorted(p.parent.name for p in (ROOT / "experiments" / "kernels").glob("*/spec.toml"))
    if args.kernels:
        kernels = [k for k in args.kernels.split(",") if k]
    classes = args.classes.split(",") if args.classes else list(CLASSES)
    unknown = sorted(set(classes) - set(CLASSES))
    if unknown:
        sys.exit(f"unknown class(es) {', '.join(unknown)}; known: {', '.join(CLASSES)}")
    counts: dict[str, Counter] = defaultdict(Counter)
    wrong_kernels: set[str] = set()
    accepted: list[str] = []
    t0 = time.perf_counter()
    for name in kernels:
        spec_path = ROOT / "experiments" / "kernels" / name
        spec = load_spec(spec_path, args.size)
        for target in args.targets.split(","):
            isa = None if target == "gfx942" else target
            if isa is not None and isa not in spec.code_objects:
                continue
            ctx = EvalContext(spec_path=str(spec_path), size=args.size, timing="none", isa=isa)
            for cls in classes:
                where = f"{name}/{target}"
                w = build_wrong(ctx, cls)
                if w is None:
                    continue
                counts[cls]["built"] += 1
                data, refused = build_candidate(ctx, w.edits)
                if data is None:
                    counts[cls]["refused_before_running"] += 1
                    print(f"{where:28s} {cls:17s} refused ({refused.status}) {w.note}", flush=True)
                    continue
                why = witnessed(ctx, w, data)
                if not why:
                    counts[cls]["not_wrong"] += 1
                    print(f"{where:28s} {cls:17s} not wrong (the witness finds it equal) "
                          f"{w.note}", flush=True)
                    continue
                t = time.perf_counter()
                v = evaluate_candidate(ctx, w.edits).verdict
                counts[cls]["wrong"] += 1
                wrong_kernels.add(where)
                if v.equal:
                    counts[cls]["accepted"] += 1
                    accepted.append(f"{where} {cls}: {w.note} ({why})")
                else:
                    counts[cls]["rejected"] += 1
                print(f"{where:28s} {cls:17s} {'ACCEPTED' if v.equal else v.status:16s} "
                      f"{time.perf_counter() - t:4.1f}s {w.note}; {why} | {v.reason[:160]}",
                      flush=True)
    print()
    print(f"{'class':18s} built refused not_wrong wrong rejected accepted")
    for cls in classes:
        c = counts[cls]
        print(f"{cls:18s} {c['built']:5d} {c['refused_before_running']:7d} {c['not_wrong']:9d} "
              f"{c['wrong']:5d} {c['rejected']:8d} {c['accepted']:8d}")
    for line in accepted:
        print(f"accepted: {line}")
    print(f"seconds={time.perf_counter() - t0:.0f}")
    print(f"kernels={len(wrong_kernels)}")
    print(f"wrong={sum(c['wrong'] for c in counts.values())}")
    print(f"accepted={sum(c['accepted'] for c in counts.values())}")


if __name__ == "__main__":
    main()
