"""The search benchmark: the engine on every kernel of a set, each best re-timed at ``large``.

    python experiments/bench_search.py --set naive --evaluations 300 --seeds 1
    python experiments/bench_search.py --set corpus --evaluations 300 --search-wall 200 \\
        --search-timing-size medium --no-large-check --jobs 2 --results runs/bench_search_corpus
    python experiments/bench_search.py --set corpus --evaluations 60 --seeds 2 --jobs 2 \\
        --results runs/bench_search_corpus
    python experiments/bench_search.py --set DIR --operators schedule=2 peephole=1

``--set``: ``naive`` (experiments/kernels_naive), ``corpus`` (experiments/kernels),
``production`` (experiments/production: Triton and AITer kernels as they ship) or any
folder of spec folders (each holding a ``spec.toml``). For every kernel and seed this
runs one engine search (asmevo.engine, as ``asmevo run`` does: islands, verified
candidates, modeled timing on the emulator) with the recommended rule-operator set --
every registered rule operator, weight 1, crossovers at rate 0.2 -- or the ``--operators
NAME=W`` given, at most ``--evaluations`` fresh evaluations at ``--size`` (candidates
timed, and checked once more on one input set, at ``--search-timing-size`` in the specs
that have that size, elsewhere at the search size; the corpus's ``medium`` sizes keep
``small``'s grid with ``large``'s trip counts, so a search sees the loops as ``large``
runs them at a cost it can pay per candidate). The search's ``--finalists`` fittest
distinct candidates are then verified again (every input set at ``--size`` and one at
``large``; ``--no-large-check``: at ``--size`` only, for sets whose large launches take
minutes to emulate in full, like the corpus) and timed at the spec's ``large`` size, with,
per distinct set of descriptor fields the search's edits changed (``--occupancy-finalists``:
VGPR granule, LDS size...), the fittest candidate changing it (more waves per SIMD pay only
where a launch has more workgroups than CUs, which ``small`` rarely has),
where K0 is timed too; the fastest there is the kernel's best, and K0 when none is
faster (a user would ship K0). A finalist that fails its re-check is printed, never kept.

Per kernel it prints K0's and the best's modeled cycles at ``large``, the speedup with
its band (the lowest and highest speedup under ``--ensemble`` parameter sets drawn within
the timing model's calibration error; a band that reaches 1 marks an ARTIFACT: faster
under some parameter sets, not under their neighbours), the evaluations spent, and the
edits that produced the best (operator and edit summary); for every speedup the
explanation (asmevo.profile.explain): per window (K0's basic blocks, followed through the
edits; blocks an edit spans are merged) the launch cycles its change in issue + stall
cycles accounts for, then the overlap term (occupancy, latency hiding, dispatch) and the
launch overhead; the terms sum to the change in modeled cycles. The last lines are
``geomean_speedup=``, ``kernels_improved=`` (speedup > 1 + ``--threshold`` under every
parameter set of the band), ``kernels_improved_nominal=`` (under the nominal set alone),
``artifacts=`` and ``max_speedup=``, all **modeled** (``speedup_label=modeled``). ``--results DIR`` keeps every run and each finished kernel's
result: a rerun with the same setup skips finished kernels and resumes a cut-off search.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

SETS = {"naive": ROOT / "experiments" / "kernels_naive",
        "corpus": ROOT / "experiments" / "kernels",
        "production": ROOT / "experiments" / "production"}
TIMING_SIZE = "large"

# the engine as bench_operators --search runs it (islands of 8, migration every 3 generations)
ENGINE = {"islands": 2, "population": 8, "generations": 1000, "migration_interval": 3,
          "migration_size": 1, "tournament": 3, "elite": 1, "hall_of_fame": 5}


class BenchError(Exception):
    """Bad command-line input: one line, exit 2."""


# --- inputs ------------------------------------------------------------------------------

def kernel_dirs(which: str) -> list[Path]:
    root = SETS.get(which) or Path(which)
    if not root.is_dir():
        raise BenchError(f"{root}: no such folder (--set naive, corpus, production or a folder "
                         "of specs)")
    dirs = sorted(p.parent for p in root.glob("*/spec.toml"))
    if not dirs:
        raise BenchError(f"{root}: holds no <kernel>/spec.toml")
    return dirs


def operator_weights(given: list[str] | None) -> dict[str, float]:
    """NAME=W pairs (default: the recommended set, every rule operator at weight 1)."""
    from asmevo.engine.config import RECOMMENDED_OPERATORS
    from asmevo.operator import known_operators

    known = known_operators()
    if not given:
        return dict(RECOMMENDED_OPERATORS["amdgpu"])
    out = {}
    for item in given:
        name, _, w = item.partition("=")
        if name not in known:
            raise BenchError(f"--operators: unknown operator {name!r}; known: "
                             f"{', '.join(sorted(known))}")
        try:
            out[name] = float(w) if w else 1.0
        except ValueError:
            raise BenchError(f"--operators: weight of {name} is not a number: {w!r}") from None
        if not out[name] > 0:
            raise BenchError(f"--operators: weight of {name} must be positive")
    return out


def search_timing_size(kernel_dir: Path, args) -> str:
    """Where a search times its candidates: ``--search-timing-size`` where the spec has
    that size (``medium`` in the corpus: large trip counts on a small grid), else
    ``--size``; the table says which."""
    want = args.search_timing_size
    if not want or want == args.size:
        return args.size
    from asmevo.launch.spec import spec_sizes
    return want if want in spec_sizes(kernel_dir) else args.size


def config_text(kernel_dir: Path, seed: int, ops: dict[str, float], args) -> str:
    """The run config (TOML) of one search."""
    from asmevo.operator import known_operators

    known = known_operators()
    xs = [o for o in ops if getattr(known[o], "kind", "mutation") == "crossover"]
    if len(xs) == len(ops):
        raise BenchError("--operators: a search needs at least one mutation operator")
    run = {"name": f"bench-search-{kernel_dir.name}-s{seed}", "seed": seed,
           "spec": str(kernel_dir), "size": args.size, "device": "emulator",
           "timing": "modeled", "evaluator": "verify"}
    timing_size = search_timing_size(kernel_dir, args)
    if timing_size != args.size:
        run["timing_size"] = timing_size
    tables = {"run": run, "engine": ENGINE | {"crossover_rate": 0.2 if xs else 0.0},
              "operators": ops,
              "budget": {"evaluations": args.evaluations, "wall_seconds": args.search_wall},
              "parallel": {"n_jobs": args.jobs}}
    return "".join(f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in t.items())
                   + "\n" for name, t in tables.items())


# --- one search ---------------------------------------------------------------------------

def search(kernel_dir: Path, seed: int, ops: dict[str, float], args, workdir: Path) -> dict:
    """Run (or resume) the engine search of one kernel and seed; its best individual."""
    from asmevo.archive import queries
    from asmevo.engine.command import _drive
    from asmevo.engine.config import load_config
    from asmevo.engine.rundir import ARCHIVE, create_run, open_run

    run_dir = workdir / kernel_dir.name / f"seed{seed}"
    cfg_text = config_text(kernel_dir, seed, ops, args)
    if (run_dir / ARCHIVE).exists():
        run = open_run(run_dir)
        if run.config.text != cfg_text:
            run.close()
            raise BenchError(f"{run_dir}: holds a run of another setup; use another --results")
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg = run_dir.parent / f"seed{seed}.toml"
        cfg.write_text(cfg_text)
        run = create_run(load_config(cfg), run_dir)
    with run:
        if run.archive.run(run.run_id)["status"] != "finished":
            _drive(run, quiet=True)
        inds = queries.individuals(run.archive, run.run_id)
        evaluations = int(inds["first"].sum())
        stats = queries.operator_stats(run.archive, run.run_id)
    return {"seed": seed, "evaluations": evaluations,
            "timing_size": search_timing_size(kernel_dir, args),
            "finalists": finalists(inds, args.finalists, args.occupancy_finalists),
            "operators": stats.to_dict(orient="records")}


def finalists(inds, k: int, occupancy: int = 0) -> list[dict]:
    """The ``k`` fittest distinct equal candidates of a search (by their search-size
    fitness, first born among ties), fittest first: what is re-timed at ``large``; then,
    for up to ``occupancy`` distinct sets of descriptor fields an edit history changes
    (VGPR granule, LDS size, ...), the fittest other candidate changing that set: more
    waves per SIMD only pay where a launch has more workgroups than CUs, which the search
    size may not have, so such candidates can rank anywhere there."""
    eq = inds[inds["status"] == "equal"]
    eq = eq.sort_values("fitness", ascending=False, kind="stable").drop_duplicates("eval_key")
    rows = [r for _, r in eq.iterrows()]
    chosen = rows[:k]
    seen: set[frozenset] = set()
    for r in rows[k:]:
        fields = frozenset(f for e in json.loads(r["edits"]) for f, _ in e.get("descriptor") or ())
        if fields and fields not in seen and len(seen) < occupancy:
            seen.add(fields)
            chosen.append(r)
    return [{"edits": json.loads(r["edits"]), "search_speedup": float(r["fitness"])}
            for r in chosen]


# --- re-timing at large and the explanation -------------------------------------------------

def retime(kernel_dir: Path, edits_json: list, args) -> dict:
    """Verify the best again (every input set at ``--size``, and one at ``large`` unless
    ``--no-large-check``) and time K0 and it at ``large``; per-window modeled cycles."""
    from asmevo.edits import Edit
    from asmevo.timing.model import model_launch
    from asmevo.verify.evaluate import (EvalContext, build_candidate, evaluate_candidate,
                                        k0_state, timing_state)
    from asmevo.verify.timing import speedup_band

    edits = tuple(Edit.from_json(e) for e in edits_json)
    timed = EvalContext(spec_path=str(kernel_dir), size=args.size, timing_size=TIMING_SIZE)
    ctx = timed if args.large_check else EvalContext(spec_path=str(kernel_dir), size=args.size)
    st = k0_state(ctx)
    ts = timing_state(timed)
    k0 = model_launch(st.k0_bytes, ts.spec, ts.values)
    if not edits:
        return {"equal": True, "k0_cycles": k0.cycles, "best_cycles": k0.cycles, "band": None,
                "windows": [], "verdict": "K0 (no accepted edit)"}
    ev = evaluate_candidate(ctx, edits)
    if not ev.verdict.equal:
        return {"equal": False, "k0_cycles": k0.cycles, "best_cycles": None, "windows": [],
                "band": None, "verdict": f"{ev.verdict.status}: {ev.verdict.reason}"}
    data, _ = build_candidate(ctx, edits)
    best = model_launch(data, ts.spec, ts.values)
    band = speedup_band(st.k0_bytes, data, ts.spec, ts.values, n=args.ensemble) \
        if best.cycles != k0.cycles else None
    return {"equal": True, "k0_cycles": k0.cycles, "best_cycles": best.cycles,
            "band": band, "windows": window_deltas(st.program, edits, k0, best, ts.spec.kernel),
            "verdict": ev.verdict.reason,
            "memory": {"k0": _mem_summary(k0.memory), "best": _mem_summary(best.memory)}}


def _mem_summary(m: dict) -> dict:
    keys = ("l1_hit", "l1_miss", "hbm_bytes", "l2_bytes")
    return {k: m.get(k) for k in keys}


def regions(program, edits, kernel: str) -> list[tuple[int, int, int, int, str]]:
    """K0's basic blocks of ``kernel`` followed through ``edits``: (K0 start, K0 end,
    start and end in the edited program, label) per region. An edit replacing
    instructions ``[s, t)`` merges the regions it overlaps into one that takes its lines
    (an insertion, ``s == t``, joins the region holding ``s``) and shifts those after it."""
    fn = program.function(kernel)
    regs = [[b.start, b.end, b.start, b.end, b.label or f"@{b.start}"] for b in fn.blocks()]
    for e in edits:
        if e.function != kernel or not regs:
            continue
        s, t, d = e.start, e.end, len(e.lines) - (e.end - e.start)
        if t > s:
            hit = [i for i, r in enumerate(regs) if r[2] < t and r[3] > s]
        else:
            hit = [i for i, r in enumerate(regs) if r[2] <= s < r[3]] or [len(regs) - 1]
        after = max(t, s + 1)
        for i, r in enumerate(regs):
            if i not in hit and r[2] >= after:
                r[2] += d
                r[3] += d
        h = [regs[i] for i in hit]
        merged = [min(r[0] for r in h), max(r[1] for r in h), min(min(r[2] for r in h), s),
                  max(max(r[3] for r in h), t) + d, "..".join(dict.fromkeys(r[4] for r in h))]
        regs = regs[:hit[0]] + [merged] + regs[hit[-1] + 1:]
    return [tuple(r) for r in regs]


def window_deltas(program, edits, k0, best, kernel: str, top: int = 6) -> list[dict]:
    """The terms of the modeled change from K0 to the best (asmevo.profile.explain): the
    windows that moved most, the rest, the overlap (occupancy, dispatch) and the launch;
    their deltas sum to the change in modeled cycles."""
    from asmevo.profile.explain import explain, summarize

    rows = summarize(explain(k0, best, regions(program, edits, kernel), kernel), top)
    return [r | {"k0_cycles": round(r["k0_cycles"]), "best_cycles": round(r["best_cycles"]),
                 "delta": round(r["delta"], 1)} for r in rows]


# --- the benchmark ------------------------------------------------------------------------

def choose(kernel_dir: Path, res: dict, args) -> dict:
    """Re-time the search's finalists at ``large`` and keep the fastest there; K0 is
    among them (a finalist slower than K0 at ``large`` leaves the speedup at 1.0, as a
    user would ship K0). A finalist that fails its re-check is reported, never kept."""
    best = None
    rejected = []
    for rank, fin in enumerate(res["finalists"]):
        lg = retime(kernel_dir, fin["edits"], args)
        if not lg["equal"]:
            rejected.append({"rank": rank, "verdict": lg["verdict"]})
            continue
        sp = lg["k0_cycles"] / lg["best_cycles"]
        if best is None or sp > best[0]:
            best = (sp, rank, fin, lg)
    if best is None or best[0] <= 1.0:
        lg = retime(kernel_dir, [], args) if best is None else \
            dict(best[3], best_cycles=best[3]["k0_cycles"], windows=[], memory=None,
                 band=None, verdict="K0 (no finalist is faster at large)")
        best = (1.0, None, {"edits": [], "search_speedup": 1.0}, lg)
    sp, rank, fin, lg = best
    return {"large": lg, "speedup": sp, "rank": rank, "edits": fin["edits"],
            "search_speedup": fin["search_speedup"], "rejected": rejected,
            "finalists_timed": len(res["finalists"])}


def run_kernel(kernel_dir: Path, ops, args, workdir: Path) -> dict:
    t0 = time.time()
    seeds = []
    for seed in range(1, args.seeds + 1):
        res = search(kernel_dir, seed, ops, args, workdir)
        res.update(choose(kernel_dir, res, args))
        seeds.append(res)
    return {"kernel": kernel_dir.name, "seeds": seeds, "seconds": round(time.time() - t0, 1),
            "speedup": math.exp(sum(math.log(s["speedup"]) for s in seeds) / len(seeds))}


def setup_of(args, ops) -> dict:
    return {"evaluations": args.evaluations, "seeds": args.seeds, "size": args.size,
            "search_timing_size": args.search_timing_size, "operators": ops,
            "ensemble": args.ensemble,
            "search_wall": args.search_wall, "large_check": args.large_check,
            "finalists": args.finalists, "occupancy_finalists": args.occupancy_finalists}


def finished(done: Path | None, kernel: str, setup: dict) -> dict | None:
    if done is None or not (done / f"{kernel}.json").exists():
        return None
    doc = json.loads((done / f"{kernel}.json").read_text())
    return doc["result"] if doc.get("setup") == json.loads(json.dumps(setup)) else None


def keep(done: Path | None, kernel: str, setup: dict, res: dict) -> None:
    if done is None:
        return
    tmp = done / f".{kernel}.json"
    tmp.write_text(json.dumps({"setup": setup, "result": res}, indent=1, default=str))
    tmp.replace(done / f"{kernel}.json")


def band_text(band) -> str:
    """A modeled speedup's band under the calibration's parameter ensemble, or nothing."""
    if not band:
        return ""
    lo, hi = band
    return (f" [band {lo:.4f}-{hi:.4f}]" if lo > 1.0 else
            f" [band {lo:.4f}-{hi:.4f}: ARTIFACT, not faster under every parameter set]")


def robust(res: dict, threshold: float) -> bool:
    """Every seed's best is faster than K0 by more than ``threshold`` under the nominal
    parameters and under every parameter set of its band."""
    return all(s["speedup"] > 1.0 + threshold and
               (s["large"].get("band") is None or s["large"]["band"][0] > 1.0 + threshold)
               for s in res["seeds"])


def report_kernel(res: dict) -> None:
    for s in res["seeds"]:
        lg = s["large"]
        best = lg["best_cycles"] if lg["best_cycles"] is not None else "rejected"
        print(f"{res['kernel']:22s} seed {s['seed']}  K0 {lg['k0_cycles']:>9} cyc  best "
              f"{best:>9}  speedup {s['speedup']:.4f}x modeled{band_text(lg.get('band'))} "
              f"(search size {s['search_speedup']:.4f}x)  {s['evaluations']} evaluations",
              flush=True)
        pick = "K0" if s["rank"] is None else f"finalist {s['rank'] + 1}"
        print(f"    timed at {s['timing_size']} in the search; {s['finalists_timed']} finalists "
              f"re-timed at {TIMING_SIZE}, kept: {pick}")
        for r in s["rejected"]:
            print(f"    finalist {r['rank'] + 1} REJECTED at re-check: {r['verdict']}")
        for e in s["edits"]:
            note = f": {e['note']}" if e.get("note") else ""
            print(f"    edit {e.get('operator') or '?'} {e['function']}[{e['start']}:{e['end']}]"
                  f" -> {len(e['lines'])} lines{note}")
        if s["speedup"] != 1.0 and lg["windows"]:
            print("    why (modeled cycles of the launch each term moves; windows: their issue + "
                  "stall cycles summed over the busiest CU's waves, K0 -> best):")
            for w in lg["windows"]:
                print(f"      {w['window']:24s} {w['label'][:44]:44s} {w['k0_cycles']:>10} -> "
                      f"{w['best_cycles']:>10} ({w['delta']:+.0f})")
            total = sum(w["delta"] for w in lg["windows"])
            print(f"      {'sum of the terms':69s} {total:+.0f} = {lg['best_cycles']} - "
                  f"{lg['k0_cycles']}")


def main(argv=None) -> int:
    from asmevo.errors import AsmevoError

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="naive", help="naive | corpus | a folder of spec folders")
    ap.add_argument("--evaluations", type=int, default=300, help="fresh evaluations per search")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--operators", nargs="+", metavar="NAME=W")
    ap.add_argument("--jobs", type=int, default=1, help="engine evaluation processes")
    ap.add_argument("--kernels", nargs="+", help="only these kernels of the set")
    ap.add_argument("--size", default="small", help="search (verification) size")
    ap.add_argument("--search-timing-size", default=None,
                    help="time candidates at this size during the search, in the specs that "
                         "have it (default and elsewhere: --size)")
    ap.add_argument("--search-wall", type=float, default=1800, help="wall seconds per search")
    ap.add_argument("--no-large-check", dest="large_check", action="store_false",
                    help="re-verify the best at --size only, not also on one input set at "
                         "large (for sets whose large launches take minutes to emulate in "
                         "full: the corpus; timing at large samples one CU's workgroups)")
    ap.add_argument("--finalists", type=int, default=5,
                    help="the search's fittest distinct candidates re-timed at large; the "
                         "fastest there (or K0) is reported")
    ap.add_argument("--occupancy-finalists", type=int, default=3,
                    help="also re-time at large, for up to N distinct sets of descriptor "
                         "fields changed (register or LDS allocation: invisible at a search "
                         "size with fewer workgroups than CUs), the fittest candidate changing "
                         "that set")
    ap.add_argument("--threshold", type=float, default=0.0)
    ap.add_argument("--ensemble", type=int, default=8,
                    help="parameter sets of each speedup's band (the calibration's error)")
    ap.add_argument("--results", help="keep runs and finished kernels here (resumable)")
    args = ap.parse_args(argv)
    try:
        dirs = kernel_dirs(args.set)
        if args.kernels:
            unknown = sorted(set(args.kernels) - {d.name for d in dirs})
            if unknown:
                raise BenchError(f"--kernels: not in {args.set}: {', '.join(unknown)}")
            dirs = [d for d in dirs if d.name in args.kernels]
        ops = operator_weights(args.operators)
        if args.evaluations < 1 or args.seeds < 1 or args.finalists < 1:
            raise BenchError("--evaluations, --seeds and --finalists must be at least 1")
        config_text(dirs[0], 1, ops, args)
    except (BenchError, AsmevoError) as exc:
        print(f"bench_search: {exc}", file=sys.stderr)
        return 2
    setup = setup_of(args, ops)
    print(f"set {args.set}: {len(dirs)} kernels; operators "
          f"{' '.join(f'{o}={w:g}' for o, w in ops.items())}; {args.evaluations} evaluations x "
          f"{args.seeds} seeds at {args.size}; bests re-timed at {TIMING_SIZE} (modeled)")
    t0 = time.time()
    done = Path(args.results) if args.results else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        work = done if done is not None else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for d in dirs:
            res = finished(done, d.name, setup)
            if res is None:
                try:
                    res = run_kernel(d, ops, args, work)
                except (BenchError, AsmevoError) as exc:
                    # a spec, size or run directory the search cannot use (say a timing size
                    # too large to emulate in full): one line; kept results stay as they are
                    print(f"bench_search: {d.name}: {exc}", file=sys.stderr)
                    return 2
                keep(done, d.name, setup, res)
            rows.append(res)
            report_kernel(res)
    sp = [r["speedup"] for r in rows]
    geo = math.exp(sum(math.log(x) for x in sp) / len(sp))
    nominal = sum(x > 1.0 + args.threshold for x in sp)
    improved = sum(robust(r, args.threshold) for r in rows)
    print(f"\n{'kernel':22s} {'speedup (modeled, large)':>24s}  band (ensemble of "
          f"{args.ensemble} parameter sets)")
    for r in rows:
        bands = [band_text(s["large"].get("band")) for s in r["seeds"]]
        print(f"{r['kernel']:22s} {r['speedup']:24.4f} {' '.join(bands)}")
    print(f"\nwall {time.time() - t0:.0f} s; speedups are modeled (CDNA3 timing model, "
          f"emulator), at size {TIMING_SIZE}")
    print("speedup_label=modeled")
    print(f"geomean_speedup={geo:.4f}")
    print(f"kernels_improved={improved}/{len(rows)}")
    print(f"kernels_improved_nominal={nominal}/{len(rows)}")
    print(f"artifacts={nominal - improved}")
    print(f"max_speedup={max(sp):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
