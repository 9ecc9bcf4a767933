#!/usr/bin/env python3
"""Does the prover's question from a launch's first state refute an accepted edit?

    python experiments/entry_sound.py --results DIR KERNEL [KERNEL ...]

For every accepted edit of the searches under ``DIR/corpus/KERNEL/seed1`` (as
``bench_proof.py --results DIR`` keeps them) and every straight-line region of it, the
question of :mod:`asmevo.prove.entry` is asked whatever the region's own answer (the
prover asks it only where a region's difference is in lanes EXEC leaves out). The edits
were equal on every launch the verifier ran, so a refutation here is one to look at.
Prints one line per question and ``edits=``, ``regions=``, ``windows=`` (the regions
the kernel's path from its entry reaches), ``refuted=``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))


def ask_kernel(kernel: str, results: Path, counts: dict) -> None:
    """The entry question on every region of ``kernel``'s accepted edits."""
    from bench_proof import accepted_edits
    from asmevo.edits import Edit
    from asmevo.prove.entry import entry_window, refute_from_entry
    from asmevo.prove.regions import NotStraight, diff_regions
    from asmevo.prove.validate import context_for
    from asmevo.verify.evaluate import EvalContext, k0_state
    st = k0_state(EvalContext(spec_path=str(ROOT / "experiments" / "kernels" / kernel),
                              size="small", timing="none"))
    kd = st.program.source.kernel(st.spec.kernel).descriptor
    programs: dict[tuple, object] = {(): st.program}

    def program(edits: list):
        key = tuple(json.dumps(e, sort_keys=True) for e in edits)
        if key not in programs:
            programs[key] = st.target.apply_edits(program(edits[:-1]),
                                                  (Edit.from_json(edits[-1]),))
        return programs[key]

    rows, _ = accepted_edits(results / "corpus" / kernel / "seed1")
    for r in rows:
        a, b = program(r["parent"]), program(r["child"])
        fa, fb = a.function(st.spec.kernel), b.function(st.spec.kernel)
        counts["edits"] += 1
        try:
            regions = diff_regions(fa, fb)
        except NotStraight:
            continue
        for reg in regions:
            counts["regions"] += 1
            if entry_window(fa, fb, reg) is None:
                continue
            counts["windows"] += 1
            t0 = time.perf_counter()
            got = refute_from_entry(context_for(a, st.spec.kernel, b), kd, st.spec.block,
                                    fa, fb, reg, 5000)
            counts["refuted"] += got is not None
            print(f"{kernel:24s} {r['operator']:16s} {reg.a} {reg.b} "
                  f"{'REFUTED ' + got.reason if got else 'not refuted'} "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="a bench_proof.py --results folder")
    ap.add_argument("kernels", nargs="+")
    args = ap.parse_args()
    counts = dict.fromkeys(("edits", "regions", "windows", "refuted"), 0)
    for k in args.kernels:
        ask_kernel(k, Path(args.results), counts)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0 if counts["refuted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
