#!/usr/bin/env python3
"""Differential fuzzing of the emulator against x86-64 (experiments/emufuzz/).

    python experiments/bench_emufuzz.py --programs N --seed S [--targets gfx942,gfx90a]
        [--opt O0,O1,O2,O3] [--jobs J] [--batch B] [--keep DIR] [--minimize K]
        [--replay DIR] [--budget SECONDS] [--clang PATH]

Random HIP programs are compiled by clang for every target and opt level and for
x86-64 (the reference), run on the emulator and compared bit for bit. Prints the
outcomes per target/opt level, the mismatch classes (by what the kernel uses:
scratch, LDS, calls), the refused mnemonics and the compile cost, and ends with
``programs=``, ``mismatches=`` and ``refused=`` (runs: program x target x opt level).
``--keep DIR`` writes every failing program there (JSON); ``--replay DIR`` runs such
a directory again instead of generating; ``--minimize K`` shrinks the first K
failing programs to reproducers (``DIR/<name>_min.json`` and ``.hip``).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.emufuzz import campaign  # noqa: E402
from experiments.emufuzz.build import OPTS, TARGETS, BuildError, clang_path  # noqa: E402
from experiments.emufuzz.campaign import FAILURES, Setup  # noqa: E402


def _list(text: str, allowed, what: str) -> tuple[str, ...]:
    vals = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [v for v in vals if v not in allowed]
    if bad or not vals:
        raise SystemExit(f"bench_emufuzz: bad {what} {','.join(bad) or text!r}; "
                         f"known: {','.join(allowed)}")
    return vals


def summarize(camp: campaign.Campaign, setup: Setup) -> dict[str, int]:
    res = camp.results
    keys = [f"{t}-{o}" for o in setup.opts for t in setup.targets]
    outcomes = sorted({r.outcome for r in res}, key=lambda o: (o != "match", o))
    table = defaultdict(Counter)
    for r in res:
        table[r.key][r.outcome] += 1
    print(f"{'target-opt':14s}" + "".join(f"{o:>15s}" for o in outcomes))
    for k in keys:
        print(f"{k:14s}" + "".join(f"{table[k][o]:15d}" for o in outcomes))
    classes = Counter((r.outcome, "+".join(r.tags) or "-") for r in res if r.outcome in FAILURES)
    if classes:
        print("\nfailures by what the kernel uses (scratch/lds/calls):")
        for (o, t), n in sorted(classes.items()):
            print(f"  {o:10s} {t:20s} {n}")
    refused = Counter(r.detail for r in res if r.outcome == "refused")
    if refused:
        print("\nrefused mnemonics: " + ", ".join(f"{m} {n}" for m, n in refused.most_common()))
    faults = Counter(r.detail.split(": ", 1)[-1][:90] for r in res if r.outcome == "fault")
    if faults:
        print("faults: " + "; ".join(f"{m} ({n})" for m, n in faults.most_common(5)))
    excl = Counter()
    for r in res:
        if r.verdict and r.verdict.excluded:
            excl.update(r.verdict.excluded)
    if excl:
        print("excluded elements by rule: " + ", ".join(f"{k} {v}" for k, v in excl.items()))
    first = [r for r in res if r.outcome == "mismatch"][:8]
    for r in first:
        print(f"  mismatch {r.program} {r.key} [{'+'.join(r.tags)}]: {r.detail}")
    comp = Counter()
    for b in camp.reports:
        comp.update(b.compile_seconds)
    total_c = sum(comp.values())
    print(f"\ncompile seconds (wall, summed over batches): "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(comp.items()))
          + f"; total {total_c:.1f} of {sum(b.seconds for b in camp.reports):.1f} batch-seconds")
    c = camp.counts()
    bad_programs = len({r.program for r in res if r.outcome == "mismatch"})
    return {"runs": len(res), "matches": c["match"], "excluded": c["excluded"],
            "faults": c["fault"], "timeouts": c["timeout"], "compile_errors": c["compile_error"],
            "host_errors": c["host_error"], "mismatching_programs": bad_programs,
            "mismatches": c["mismatch"], "refused": c["refused"]}


def write_results(path: Path, camp: campaign.Campaign) -> None:
    """One JSON object per run: program, target, opt, outcome, detail, tags, seconds."""
    with path.open("w") as f:
        for r in camp.results:
            f.write(json.dumps({"program": r.program, "target": r.target, "opt": r.opt,
                                "outcome": r.outcome, "detail": r.detail, "tags": list(r.tags),
                                "seconds": round(r.seconds, 3)}) + "\n")


def minimize_failures(keep: Path, camp: campaign.Campaign, k: int, setup: Setup) -> None:
    from experiments.emufuzz.ir import to_json
    from experiments.emufuzz.minimize import minimize, size
    from experiments.emufuzz.render import gpu_source, host_source
    progs = {p.name: p for p in campaign.load_failures(keep)}
    done = 0
    for r in camp.results:
        if done >= k:
            break
        if r.outcome not in FAILURES or r.program not in progs \
                or (keep / f"{r.program}_min.json").exists():
            continue
        p = progs[r.program]
        q, rq = minimize(p, r, clang=Path(setup.clang) if setup.clang else None)
        rec = {"program": json.loads(to_json(q)),
               "failed": [{"target": rq.target, "opt": rq.opt, "outcome": rq.outcome,
                           "detail": rq.detail}], "from": r.program}
        (keep / f"{r.program}_min.json").write_text(json.dumps(rec, indent=1))
        (keep / f"{r.program}_min.hip").write_text(
            '#include "prelude.h"\n#if GPU\n' + gpu_source(q) + "#else\n" + host_source(q)
            + "#endif\n")
        print(f"minimized {r.program} {r.key} {r.outcome}: size {size(p)} -> {size(q)}; "
              f"{rq.detail}")
        done += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program index of the stream")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--opt", default=",".join(OPTS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=25, help="programs per compiled source")
    ap.add_argument("--keep", help="directory for failing programs (JSON)")
    ap.add_argument("--replay", help="run the programs of this directory instead")
    ap.add_argument("--minimize", type=int, default=0, metavar="K",
                    help="shrink the first K failing programs (needs --keep)")
    ap.add_argument("--budget", type=float, help="stop after this many seconds")
    ap.add_argument("--clang", help="clang to use (default: llvm-19's)")
    ap.add_argument("--results", help="write every run's outcome here (JSON lines)")
    a = ap.parse_args()
    targets = _list(a.targets, TARGETS, "target")
    opts = _list(a.opt, OPTS, "opt level")
    if a.programs < 1 or a.batch < 1 or a.jobs < 1:
        raise SystemExit("bench_emufuzz: --programs, --batch and --jobs must be >= 1")
    if a.minimize and not a.keep:
        raise SystemExit("bench_emufuzz: --minimize needs --keep DIR")
    try:
        clang = str(clang_path(a.clang))
    except BuildError as exc:
        print(f"bench_emufuzz: {exc}", file=sys.stderr)
        return 2
    setup = Setup(targets=targets, opts=opts, clang=clang, keep=a.keep)
    if a.replay:
        try:
            progs = campaign.load_failures(Path(a.replay))
        except ValueError as exc:
            print(f"bench_emufuzz: {exc}", file=sys.stderr)
            return 2
        jobs = campaign.replay_jobs(progs, a.batch, setup)
        what = f"replay of {len(progs)} programs from {a.replay}"
    else:
        jobs = campaign.generated_jobs(a.seed, a.programs, a.batch, setup, a.start)
        what = f"seed {a.seed}, programs {a.start}..{a.start + a.programs - 1}"
    print(f"emufuzz: {what}; targets {','.join(targets)}; {','.join(opts)}; "
          f"{len(jobs)} batches on {a.jobs} processes; clang {clang}", flush=True)

    def progress(camp):
        c = camp.counts()
        print(f"  [{camp.programs} programs] " + " ".join(f"{k}={v}" for k, v in sorted(c.items())),
              flush=True)

    camp = campaign.run(jobs, a.jobs, setup, progress=progress, budget=a.budget)
    if camp.cut:
        print(f"budget of {a.budget:.0f} s reached: stopped after {camp.programs} programs")
    if a.minimize:
        minimize_failures(Path(a.keep), camp, a.minimize, setup)
    if a.results:
        write_results(Path(a.results), camp)
    figures = summarize(camp, setup)
    figures["wall_seconds"] = round(camp.wall, 1)
    last = ("programs", "mismatches", "refused")
    for k, v in figures.items():
        if k not in last:
            print(f"{k}={v}")
    print(f"programs={camp.programs}")
    print(f"mismatches={figures['mismatches']}")
    print(f"refused={figures['refused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
