"""What each operator contributes to the bests a search found: leave its edits out, re-check,
re-time.

    python experiments/ablate_best.py --set production --results runs/bench_search_production \\
        --operators trim_lds,occupancy_rename,fold_moves,mfma_schedule

``--results`` is a ``bench_search.py --results`` folder. For every kernel whose best carries
edits of an operator named in ``--operators``, that operator's edits are removed from the
best's history and the edits after them rebased (a removed edit that replaced ``[s, t)``
with ``n`` lines shifts the later windows behind it by ``t - s - n``; a later edit that
overlaps a removed one's lines depends on it: "not separable"). What is left is verified
again (every input set at ``--size``) and timed at ``large`` beside K0, as bench_search
times its finalists. ``contribution`` is the best's modeled cycles without the operator
over its cycles with it; a candidate that is no longer equal (a later edit relied on the
removed one, say a register trim after a rename) is printed with its verdict and counts
as not separable. Per operator the last lines give ``<op>_kernels=`` (bests that carry it)
and ``<op>_geomean_contribution=`` over the whole set (1.0 where it is not used; not
separable counts 1.0 and is reported). All **modeled** (``speedup_label=modeled``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))


def without(edits: list[dict], drop: str) -> list[dict] | None:
    """``edits`` less those of operator ``drop``, later windows rebased; None where a kept
    edit overlaps the lines of a removed one (it was proposed on top of them)."""
    removed: list[list] = []            # [function, start, end] of removed lines, current
    kept = []
    for e in edits:
        s, t, n = e["start"], e["end"], len(e.get("lines") or ())
        if e.get("operator") == drop:
            removed.append([e["function"], s, s + n, n - (t - s)])
            continue
        shift = 0
        for fn, rs, re_, d in removed:
            if fn != e["function"]:
                continue
            if s < re_ and (t > rs or s >= rs):
                return None
            if re_ <= s:
                shift += d
        for r in removed:               # the kept edit moves the removed lines behind it
            if r[0] == e["function"] and r[1] >= t:
                r[1] += n - (t - s)
                r[2] += n - (t - s)
        kept.append(dict(e, start=s - shift, end=t - shift))
    return kept


def ablate_kernel(kernel_dir: Path, result: dict, ops: list[str], args) -> dict:
    """Per operator in ``ops`` that the best uses: the best's speedup without it."""
    from bench_search import retime

    seed = result["seeds"][0]
    edits = seed["edits"]
    out = {}
    for op in ops:
        if not any(e.get("operator") == op for e in edits):
            continue
        rest = without(edits, op)
        if rest is None:
            out[op] = {"verdict": "not separable (a later edit overlaps its lines)"}
            continue
        lg = retime(kernel_dir, rest, args)
        if not lg["equal"]:
            out[op] = {"verdict": f"not separable: {lg['verdict']}"}
            continue
        best = seed["large"]["best_cycles"]
        out[op] = {"verdict": "equal", "without": lg["k0_cycles"] / lg["best_cycles"],
                   "contribution": lg["best_cycles"] / best}
    return out


def main(argv=None) -> int:
    from bench_search import kernel_dirs

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="production")
    ap.add_argument("--results", required=True, help="a bench_search.py --results folder")
    ap.add_argument("--operators", default="trim_lds,occupancy_rename,fold_moves,mfma_schedule")
    ap.add_argument("--kernels", nargs="+")
    ap.add_argument("--size", default="small")
    args = ap.parse_args(argv)
    args.large_check, args.ensemble = False, 2
    ops = args.operators.split(",")
    logs = {op: [] for op in ops}
    used = {op: 0 for op in ops}
    dirs = [d for d in kernel_dirs(args.set) if not args.kernels or d.name in args.kernels]
    for d in dirs:
        f = Path(args.results) / f"{d.name}.json"
        if not f.exists():
            print(f"{d.name}: no result in {args.results}")
            continue
        res = json.loads(f.read_text())["result"]
        print(f"{d.name}: best {res['speedup']:.4f}x modeled", flush=True)
        for op, r in ablate_kernel(d, res, ops, args).items():
            used[op] += 1
            if "contribution" in r:
                logs[op].append(math.log(r["contribution"]))
                print(f"    without {op}: {r['without']:.4f}x modeled; "
                      f"contribution {r['contribution']:.4f}x")
            else:
                print(f"    without {op}: {r['verdict']}")
    print("speedup_label=modeled")
    for op in ops:
        geo = math.exp(sum(logs[op]) / len(dirs)) if dirs else 1.0
        print(f"{op}_kernels={used[op]}")
        print(f"{op}_geomean_contribution={geo:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
