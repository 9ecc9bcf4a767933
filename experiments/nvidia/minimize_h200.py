"""Shrink the edit lists of candidates that passed the legality rules but were not
bit-equal, to the fewest edits that still make the difference (on the GPU).

Reads the ``rejected`` entries of a ``search_h200.json``, or the list that
``bench_operators.py --dump-bad`` writes; for each, first re-judges the whole list
``--repeat`` times (a transient fault or a reproducible difference?), then removes one
edit at a time while the rest still applies, passes the legality rules and is
still not bit-equal (greedy, to a fixed point), then tries every edit of the
minimal list alone on K0. Every verdict comes from the verifier itself
(``asmevo.verify.evaluate``: all input sets at ``small``, one more at ``large``).

    python experiments/nvidia/minimize_h200.py RESULTS.json --out $OUT [--limit 3] [--repeat 3]

Writes ``minimized.json`` into ``--out``: per entry the verdicts of the repeats,
the minimal edit list, its verdict, and each of its edits' verdict alone.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WRONG = ("mismatch", "nondeterministic", "fault")


def _verdict(ctx, edits) -> str:
    from asmevo.verify.evaluate import evaluate_candidate
    v = evaluate_candidate(ctx, tuple(edits)).verdict
    return f"{v.status}: {v.reason[:200]}"


def minimize(ctx, edits: list, budget: int) -> tuple[list, str, int]:
    """The smallest sub-list (greedy one-by-one removal) that is still WRONG."""
    cur, why, spent = list(edits), _verdict(ctx, edits), 1
    if not why.startswith(WRONG):
        return cur, why, spent
    changed = True
    while changed and spent < budget:
        changed = False
        for i in range(len(cur)):
            trial = cur[:i] + cur[i + 1:]
            v = _verdict(ctx, trial)
            spent += 1
            if v.startswith(WRONG):
                cur, why, changed = trial, v, True
                break
            if spent >= budget:
                break
    return cur, why, spent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a search_h200.json or a bench_operators --dump-bad list")
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=3, help="entries per kernel")
    ap.add_argument("--budget", type=int, default=40, help="evaluations per entry")
    ap.add_argument("--size", default="small")
    ap.add_argument("--timing-size", default="large")
    ap.add_argument("--repeat", type=int, default=1, help="judge the whole list this often first")
    args = ap.parse_args(argv)
    from asmevo.edits import Edit, edits_from_json
    from asmevo.verify.evaluate import EvalContext

    doc = json.loads(Path(args.results).read_text())
    kernels = doc["kernels"] if isinstance(doc, dict) else doc
    if kernels and "edits" in kernels[0]:          # bench_operators --dump-bad entries
        kernels = [{"kernel": b["kernel"], "rejected": [{"edits": b["edits"],
                                                          "reason": b["status"]}]}
                   for b in kernels]
    out = []
    for r in kernels:
        for entry in (r.get("rejected") or [])[:args.limit]:
            ctx = EvalContext(spec_path=str(HERE / "specs" / f"{r['kernel']}.toml"),
                              size=args.size, timing_size=args.timing_size, device="cuda",
                              timing="none", target="nvidia")
            raw = entry["edits"]          # a JSON string (search) or a list (--dump-bad)
            edits = list(edits_from_json(raw) if isinstance(raw, str) else
                         (Edit.from_json(e) for e in raw))
            t0 = time.time()
            repeats = [_verdict(ctx, edits) for _ in range(args.repeat)]
            print(f"{r['kernel']}: judged {args.repeat}x: "
                  f"{sorted(v.split(':')[0] for v in repeats)}", flush=True)
            small, why, spent = minimize(ctx, edits, args.budget)
            alone = [{"edit": e.to_json(), "verdict": _verdict(ctx, [e])} for e in small]
            res = {"kernel": r["kernel"], "was": entry["reason"][:200], "edits": len(edits),
                   "repeats": repeats,
                   "minimal": [e.to_json() for e in small], "verdict": why,
                   "alone": alone, "evaluations": spent + len(small) + args.repeat,
                   "seconds": round(time.time() - t0, 1)}
            out.append(res)
            print(f"{r['kernel']}: {len(edits)} -> {len(small)} edits ({why[:90]})", flush=True)
            for e, a in zip(small, alone):
                print(f"    {e.note or e.operator}: alone {a['verdict'][:80]}", flush=True)
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "minimized.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
