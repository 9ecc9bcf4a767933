"""Soundness and effect of the rule operators, measured on the kernel corpus.

Soundness (default): for every corpus kernel and every registered rule
operator, up to N applications (``--applications``, default 200) to K0 and to
individuals that already carry 1-2 accepted edits (a real search applies
operators to evolved individuals; crossover operators get two such parents).
Every produced candidate is built, statically gated and verified bit-equal on
the emulator; identical candidates (same built code object) are judged once.
Applications run in rounds over (kernel, operator) so that a wall budget
(``--budget`` seconds) cuts every pair at the same effective N, which is
printed. ``--streams S`` splits each kernel's N rounds into S independent streams
(own random stream and pool each) run as separate jobs, so that a few costly
kernels use many cores. The last line is ``rejected_sound=<n>``: rejections of operators that
claim to preserve semantics (every rule operator does).

    python experiments/bench_operators.py --jobs 2 --budget 1200
    python experiments/bench_operators.py --kernels vector_add,tri_softmax --applications 20
    python experiments/bench_operators.py --set naive --operators licm,scalarize --applications 50
    python experiments/bench_operators.py --set production --operators trim_lds,fold_moves \
        --applications 200

Effect (``--search``): one engine run per kernel with only the rule operators,
at most ``--evaluations`` (300) evaluations, modeled timing; prints the best
modeled speedup per kernel, a per-operator table of acceptance and
improvement, and ends with ``kernels_improved=<k>/<n>``.

    python experiments/bench_operators.py --search --kernels vector_add --evaluations 100

NVIDIA (``--target nvidia``, on a GPU machine): the same soundness measure for
the SASS operators (sass_move, sass_retime) over the sm_90 corpus
(``experiments/nvidia/specs``), verified bit-equal on the ``cuda`` device:

    python experiments/bench_operators.py --target nvidia --jobs 4 --applications 100 \
        --check-size large
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELS = ROOT / "experiments" / "kernels"
SETS = {"corpus": KERNELS, "naive": ROOT / "experiments" / "kernels_naive",
        "production": ROOT / "experiments" / "production"}
NON_RULE = {"nop_remove", "swap_adjacent"}      # the engine's baseline operators


NVSPECS = ROOT / "experiments" / "nvidia" / "specs"


def rule_operators(target: str = "amdgpu") -> list[str]:
    """Every registered rule operator (defined under ``asmevo.operators.rules``) for ``target``."""
    from asmevo.operator import known_operators
    return [n for n, f in known_operators().items()
            if target in f.targets and n not in NON_RULE
            and f.__module__.startswith("asmevo.operators.rules")]


def corpus(target: str = "amdgpu", root: Path | None = None) -> list[str]:
    if target == "nvidia":
        return sorted(p.stem for p in NVSPECS.glob("*.toml"))
    return sorted(p.parent.name for p in (root or KERNELS).glob("*/spec.toml"))


def spec_path(kernel: str, target: str = "amdgpu", root: Path | None = None) -> Path:
    return NVSPECS / f"{kernel}.toml" if target == "nvidia" else (root or KERNELS) / kernel


# --- soundness ---------------------------------------------------------------------------

class Programs:
    """Recovered K0 plus edits, cached by edit chain."""

    def __init__(self, k0, target):
        self.k0, self.target = k0, target
        self.cache: dict[tuple, object] = {(): k0}

    def __call__(self, ind):
        key = tuple(e.key for e in ind.edits)
        hit = self.cache.get(key)
        if hit is None:
            parent = self(type(ind)(ind.id, ind.edits[:-1]))
            hit = self.target.apply_edits(parent, (ind.edits[-1],))
            self.cache[key] = hit
        return hit


def soundness_kernel(kernel: str, operators: list[str], applications: int, deadline: float,
                     seed: int, size: str, target: str = "amdgpu",
                     device: str = "emulator", check_size: str | None = None,
                     root: str | None = None, stream: int = 0,
                     shared: str | None = None) -> dict:
    """Rounds of applications of every operator on one kernel until ``applications``
    rounds or the deadline (wall clock, ``time.time()``). ``stream`` > 0: an
    independent stream of rounds (its own random stream and pool, see ``--streams``);
    ``shared``: a folder of verdicts the streams of one run share (:func:`_shared_verdict`)."""
    import warnings

    from asmevo.edits import as_edits
    from asmevo.engine.individual import Individual
    from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate, k0_state
    from asmevo.operator import OperatorContext, Rejected, get_operator

    warnings.filterwarnings("ignore")
    ctx = EvalContext(spec_path=str(spec_path(kernel, target, root and Path(root))), size=size,
                      timing="none",
                      device=device, target=target, timing_size=check_size)
    st = k0_state(ctx)
    name = st.spec.kernel
    programs = Programs(st.program, st.target)
    ops = {o: get_operator(o) for o in operators}
    rng = random.Random(f"{seed}:{kernel}" + (f":{stream}" if stream else ""))
    pool = [Individual("k0")]                   # K0 and accepted individuals (<= 2 edits)
    verdicts: dict[str, str] = {}               # built hash (or edit hash) -> status
    stats = {o: Counter() for o in operators}
    reasons = {o: Counter() for o in operators}
    bad: list[dict] = []
    rounds = 0
    for r in range(applications):
        if time.time() > deadline:
            break
        for o in operators:
            op = ops[o]
            parent = pool[0] if rng.random() < 0.4 or len(pool) == 1 else rng.choice(pool[1:])
            octx = OperatorContext(k0=st.program, kernel=name, rng=random.Random(rng.random()),
                                   program_of=programs)
            try:
                if op.kind == "crossover":
                    mate = rng.choice(pool)
                    edit = op.crossover(parent, mate, octx)
                else:
                    edit = op.mutate(parent, octx)
            except Exception as exc:  # noqa: BLE001 - an operator crash is a bug: count it
                stats[o]["crash"] += 1
                reasons[o][f"crash: {type(exc).__name__}: {exc}"[:120]] += 1
                continue
            stats[o]["applications"] += 1
            if isinstance(edit, Rejected):
                stats[o]["none"] += 1
                reasons[o][edit.reason[:90]] += 1
                continue
            stats[o]["produced"] += 1
            edits = parent.edits + as_edits(edit)
            data, verdict = build_candidate(ctx, edits)
            key = hashlib.sha256(data).hexdigest() if data is not None else \
                "edits:" + "/".join(e.key for e in edits)
            status = verdicts.get(key)
            if status is None:
                stats[o]["distinct"] += 1
                status = _shared_verdict(shared, key)
                if status is None:
                    stats[o]["judged"] += 1
                    status = verdict.status if verdict is not None else \
                        evaluate_candidate(ctx, edits).verdict.status
                    _share_verdict(shared, key, status)
                verdicts[key] = status
                if status != "equal":
                    bad.append({"kernel": kernel, "operator": o, "status": status,
                                "edits": [e.to_json() for e in edits]})
                elif len(edits) <= 2 and data is not None:
                    pool.append(Individual(f"{len(pool)}", edits))
            stats[o][status] += 1
        rounds = r + 1
    return {"kernel": kernel, "rounds": rounds, "stats": stats, "reasons": reasons,
            "bad": bad, "pool": len(pool) - 1}


def run_soundness(args) -> int:
    from joblib import Parallel, delayed

    root = SETS[args.set]
    kernels = args.kernels or corpus(args.target, root)
    operators = args.operators or rule_operators(args.target)
    # the costliest kernels first (code size), so that they do not start last
    kernels.sort(key=lambda k: -_code_size(k, args.target, root))
    t0 = time.time()
    # every kernel gets an equal share of the wall budget on each worker
    waves = -(-len(kernels) * max(1, args.streams) // max(1, args.jobs))
    share = args.budget / waves if args.budget else float("inf")
    if args.kernel_budget:
        share = min(share, args.kernel_budget)
    done = Path(args.results) if args.results else None
    setup = {"operators": operators, "applications": args.applications, "seed": args.seed,
             "size": args.size, "target": args.target, "check_size": args.check_size}
    if args.set != "corpus":
        setup["set"] = args.set
    shared, stack = None, contextlib.ExitStack()
    if args.streams > 1:
        setup["streams"] = args.streams
        # kept beside the results (a resumed run reuses them), else removed at the end
        shared = str(done / ".verdicts") if done else \
            stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-verdicts-"))
    results, jobs = [], []
    # with no time limit, a kept kernel an earlier run's budget cut short runs again
    full = not args.budget and not args.kernel_budget
    for k in kernels:
        for i, n in enumerate(stream_rounds(args.applications, args.streams)):
            part = k if args.streams == 1 else f"{k}.{i}"
            kept = _finished(done, part, dict(setup, applications=n), full=full)
            if kept is not None:          # a part a killed run already finished: resume
                results.append(kept)
                continue
            jobs.append(delayed(_timed)(k, operators, n, share, args.seed, args.size,
                                        args.target, args.device, args.check_size, done,
                                        dict(setup, applications=n), str(root), i, part,
                                        shared))
    if results:
        print(f"resumed: {len(results)} parts already done in {done}", flush=True)
    with stack:
        results = merge_streams(results + Parallel(n_jobs=args.jobs, backend="loky")(jobs),
                                operators)
    wall = time.time() - t0
    total = {o: Counter() for o in operators}
    why = {o: Counter() for o in operators}
    bad = []
    for res in results:
        for o in operators:
            total[o].update(res["stats"][o])
            why[o].update(res["reasons"][o])
        bad.extend(res["bad"])
    statuses = sorted({s for o in operators for s in total[o]} - {
        "applications", "none", "produced", "distinct", "judged", "equal", "crash"})
    head = f"{'operator':22s} {'applied':>8s} {'none':>7s} {'produced':>8s} {'distinct':>8s} " \
           f"{'equal':>7s} {'crash':>6s} " + " ".join(f"{s:>8s}" for s in statuses)
    print(head)
    print("-" * len(head))
    rejected = 0
    for o in operators:
        c = total[o]
        rej = sum(c[s] for s in statuses)
        rejected += rej + c["crash"]
        print(f"{o:22s} {c['applications']:8d} {c['none']:7d} {c['produced']:8d} "
              f"{c['distinct']:8d} {c['equal']:7d} {c['crash']:6d} "
              + " ".join(f"{c[s]:8d}" for s in statuses))
    print()
    for o in operators:
        top = why[o].most_common(args.reasons)
        if top:
            print(f"{o}: most frequent reasons for no edit")
            for text, n in top:
                print(f"  {n:6d}  {text}")
    rounds = [res["rounds"] for res in results]
    print()
    print("effective N per kernel: " + ", ".join(f"{r['kernel']}={r['rounds']}" for r in results))
    print(f"effective N: min {min(rounds)}, mean {sum(rounds) / len(rounds):.1f} "
          f"(asked {args.applications}); kernels {len(kernels)}, operators {len(operators)}, "
          f"jobs {args.jobs}, streams {args.streams}; wall {wall:.0f} s")
    if args.streams > 1:
        print(f"streams: {sum(total[o]['judged'] for o in operators)} candidates judged, "
              f"{sum(total[o]['distinct'] for o in operators)} distinct within a stream "
              "(the rest answered from another stream's verdict)")
    if bad:                # every rejection counted by kernel, operator and status; the
        print("rejections by kernel:")     # first 20 shown with their edits below
        for (k, o, st), n in sorted(Counter((b["kernel"], b["operator"], b["status"])
                                            for b in bad).items()):
            print(f"  {k:24s} {o:22s} {st:18s} {n:5d}")
    for b in bad[:20]:
        print(f"REJECTED {b['kernel']} {b['operator']} {b['status']}: "
              f"{[e['note'] or e['operator'] for e in b['edits']]}")
    if args.dump_bad and bad:
        import json
        Path(args.dump_bad).write_text(json.dumps(bad, indent=1))
        print(f"rejected candidates (with their edits) written to {args.dump_bad}")
    print(f"rejected_sound={rejected}")
    return 0


def _shared_verdict(shared: str | None, key: str) -> str | None:
    """The status another stream of this run gave the candidate ``key``, if any: streams
    of one kernel meet the same candidates (K0's neighbours above all), and the verdict
    is a function of the built code object, so each is judged about once per run."""
    if shared is None:
        return None
    try:
        return (Path(shared) / key[-2:] / key).read_text() or None
    except OSError:
        return None


def _share_verdict(shared: str | None, key: str, status: str) -> None:
    if shared is None:
        return
    path = Path(shared) / key[-2:] / key
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{key}.{os.getpid()}")
    tmp.write_text(status)
    tmp.replace(path)                 # whole or absent for a reader


def stream_rounds(applications: int, streams: int) -> list[int]:
    """The rounds of each of ``streams`` streams: ``applications`` split as evenly as can
    be (the first ones take the remainder), none empty."""
    streams = max(1, min(streams, applications))
    return [applications // streams + (i < applications % streams) for i in range(streams)]


def merge_streams(parts: list[dict], operators: list[str]) -> list[dict]:
    """One result per kernel from its streams' results: rounds, counts, reasons and
    rejections added up (a candidate two streams both produced counts as distinct in
    each), in the order the kernels first appear."""
    merged: dict[str, dict] = {}
    for res in parts:
        m = merged.get(res["kernel"])
        if m is None:
            merged[res["kernel"]] = {**res, "stats": {o: Counter(res["stats"][o]) for o in operators},
                                     "reasons": {o: Counter(res["reasons"][o]) for o in operators},
                                     "bad": list(res["bad"])}
            continue
        m["rounds"] += res["rounds"]
        m["pool"] += res["pool"]
        m["bad"] += res["bad"]
        for o in operators:
            m["stats"][o].update(res["stats"][o])
            m["reasons"][o].update(res["reasons"][o])
    return list(merged.values())


def _timed(kernel, operators, applications, share, seed, size, target, device, check_size,
           done=None, setup=None, root=None, stream=0, part=None, shared=None):
    res = soundness_kernel(kernel, operators, applications, time.time() + share, seed, size,
                           target, device, check_size, root, stream, shared)
    part = part or kernel
    if done is not None:              # kept at once: a killed run loses no finished part
        import json
        done.mkdir(parents=True, exist_ok=True)
        tmp = done / f".{part}.json"
        tmp.write_text(json.dumps({"setup": setup, "result": res}, default=dict))
        tmp.replace(done / f"{part}.json")
    print(f"{part}: N {res['rounds']}, "
          f"{sum(res['stats'][o]['distinct'] for o in operators)} distinct candidates, "
          f"{len(res['bad'])} rejected", flush=True)
    return res


def _finished(done, kernel, setup, full=False):
    """A finished kernel's result from an earlier run with the same setup, else None
    (also None with ``full`` when that run's budget cut it below the asked N)."""
    import json
    if done is None or not (done / f"{kernel}.json").exists():
        return None
    doc = json.loads((done / f"{kernel}.json").read_text())
    if doc.get("setup") != json.loads(json.dumps(setup)):
        return None
    res = doc["result"]
    if full and res["rounds"] < setup["applications"]:
        return None
    for key in ("stats", "reasons"):
        res[key] = {o: Counter(c) for o, c in res[key].items()}
    return res


def _code_size(kernel: str, target: str, root: Path | None = None) -> int:
    try:
        from asmevo.launch.spec import load_spec
        return load_spec(spec_path(kernel, target, root)).code_object.stat().st_size
    except Exception:  # noqa: BLE001 - ordering only
        return 0


# --- effect (engine search) ------------------------------------------------------------------

CONFIG = """\
[run]
name = "bench-{kernel}"
seed = {seed}
spec = "{spec}"
size = "{size}"
device = "emulator"
timing = "modeled"
evaluator = "verify"
proof_budget = {proof_budget}

[engine]
islands = 2
population = 8
generations = 100
migration_interval = 3
migration_size = 1
tournament = 3
elite = 1
hall_of_fame = 5
crossover_rate = {crossover_rate}

[operators]
{operators}

[budget]
evaluations = {evaluations}
wall_seconds = {wall}

[parallel]
n_jobs = {jobs}
"""


def search_kernel(kernel: str, operators: list[str], args, workdir: Path) -> dict:
    from asmevo.archive import queries
    from asmevo.archive.store import ArchiveError
    from asmevo.engine.command import _drive
    from asmevo.engine.config import load_config
    from asmevo.engine.rundir import create_run
    from asmevo.operator import known_operators

    factories = known_operators()
    muts = [o for o in operators if getattr(factories[o], "kind", "mutation") != "crossover"]
    xs = [o for o in operators if getattr(factories[o], "kind", "mutation") == "crossover"]
    cfg = workdir / f"{kernel}.toml"
    cfg.write_text(CONFIG.format(
        kernel=kernel, seed=args.seed, spec=str(KERNELS / kernel), size=args.size,
        crossover_rate=0.2 if xs else 0.0, evaluations=args.evaluations,
        wall=args.search_wall, jobs=args.jobs, proof_budget=args.proof_budget,
        operators="\n".join(f"{o} = 1.0" for o in muts + xs)))
    run_dir = workdir / kernel
    with create_run(load_config(cfg), run_dir) as run:
        _drive(run, quiet=True)
        stats = queries.operator_stats(run.archive, run.run_id)
        evals = queries.evaluations(run.archive, run.run_id)
        stop = run.archive.run(run.run_id)["stop_reason"]
        try:
            best = float(queries.best_individual(run.archive, run.run_id)["fitness"])
        except ArchiveError:             # nothing accepted: K0 stays the best
            best = 1.0
    return {"kernel": kernel, "best": best, "stats": stats, "evaluations": len(evals),
            "stop": stop, "median_eval_s": float(evals["seconds"].median()) if len(evals) else 0.0}


def run_search(args) -> int:
    import pandas as pd

    kernels = args.kernels or corpus()
    operators = args.operators or rule_operators()
    t0 = time.time()
    rows = []
    tables = []
    with tempfile.TemporaryDirectory(prefix="bench-operators-") as tmp:
        for k in kernels:
            t = time.time()
            res = search_kernel(k, operators, args, Path(tmp))
            rows.append(res)
            tables.append(res["stats"].assign(kernel=k))
            print(f"{k:26s} best modeled speedup {res['best']:.4f}x  ({time.time() - t:.0f} s, "
                  f"{res['evaluations']} evaluations, median {res['median_eval_s']:.2f} s, "
                  f"stopped by {res['stop']})",
                  flush=True)
    allstats = pd.concat(tables) if tables else pd.DataFrame()
    if not allstats.empty:
        agg = allstats.groupby("operator")[["proposals", "edits", "no_proposal", "accepted",
                                            "improved"]].sum()
        agg["acceptance_rate"] = (agg["accepted"] / agg["edits"]).fillna(0).round(3)
        agg["improvement_rate"] = (agg["improved"] / agg["edits"]).fillna(0).round(3)
        print()
        print(agg.to_string())
    improved = sum(r["best"] > 1.0 + args.threshold for r in rows)
    # the search wall, not the evaluation budget, ended these kernels' searches
    cut = [r["kernel"] for r in rows if r["stop"] == "budget.wall_seconds"]
    print(f"\nwall {time.time() - t0:.0f} s")
    print(f"kernels_cut_by_wall={len(cut)}/{len(rows)}" + (f" ({', '.join(cut)})" if cut else ""))
    print(f"kernels_improved={improved}/{len(rows)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--applications", type=int, default=200, help="N per kernel and operator")
    p.add_argument("--kernels", type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--set", choices=sorted(SETS), default="corpus",
                   help="soundness: the kernel set (corpus: experiments/kernels, naive: "
                        "experiments/kernels_naive)")
    p.add_argument("--operators", type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--budget", type=float, default=1500.0,
                   help="wall seconds for the soundness run (0: none); cuts N evenly")
    p.add_argument("--size", default="small")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dump-bad", help="write every rejected candidate's edits (JSON) here")
    p.add_argument("--results", help="keep each finished kernel's result here (JSON); a rerun "
                   "with the same settings skips those kernels (resume after a kill)")
    p.add_argument("--streams", type=int, default=1,
                   help="split each kernel's N rounds into this many independent streams "
                        "(own random stream and pool each), run as separate jobs: more "
                        "parallel work than kernels; counts are summed per kernel")
    p.add_argument("--kernel-budget", type=float, default=0.0,
                   help="wall seconds per kernel at most (0: none); cuts N for slow kernels")
    p.add_argument("--reasons", type=int, default=3, help="no-edit reasons shown per operator")
    p.add_argument("--search", action="store_true", help="measure effect with engine runs")
    p.add_argument("--evaluations", type=int, default=300)
    p.add_argument("--search-wall", type=int, default=600, help="wall seconds per kernel")
    from asmevo.prove.stage import BUDGET_S
    p.add_argument("--proof-budget", type=float, default=BUDGET_S,
                   help="--search: seconds one candidate's proof may take ([run] proof_budget)")
    p.add_argument("--threshold", type=float, default=0.005,
                   help="speedup above 1 + this counts as improved")
    p.add_argument("--target", default="amdgpu", choices=("amdgpu", "nvidia"),
                   help="nvidia: the SASS operators on the sm_90 corpus (needs a GPU)")
    p.add_argument("--device", help="default: emulator (amdgpu), cuda (nvidia)")
    p.add_argument("--check-size", help="also check each candidate on one input set at this "
                   "size (e.g. large: some differences show only there)")
    args = p.parse_args(argv)
    if args.streams < 1:
        p.error(f"--streams must be at least 1, not {args.streams}")
    args.device = args.device or ("cuda" if args.target == "nvidia" else "emulator")
    if args.search and args.target != "amdgpu":
        p.error("--search measures modeled speedups: amdgpu only "
                "(NVIDIA searches: experiments/nvidia/search_h200.py)")
    return run_search(args) if args.search else run_soundness(args)


if __name__ == "__main__":
    sys.exit(main())
