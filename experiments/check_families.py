#!/usr/bin/env python3
"""Check every spec's launch family against its reference: is each member in the contract?

    python experiments/check_families.py [--kernels a,b] [--set corpus|naive|all]
                                         [--size small] [--seed 0] [--inputs 0,1] [--jobs N]

Verification runs K0 at the members of a spec's ``[family]`` that
``family_space(spec, size).members(seed)`` lists (it takes as many as its budget
allows) and holds candidates to K0's results there. That only means something
where K0 computes what the kernel is for: this script runs K0 on the emulator at
every member listed, on the inputs ``make_inputs(member_spec, s)`` draws for each
``s`` of ``--inputs`` (0: every scalar at its value; 1: scalars with a domain drawn
from it), and compares the written buffers with the spec's numpy reference as
``asmevo emulate --check`` does (:func:`asmevo.launch.check.check_outputs`).

One line per (kernel, member, input seed), then ``name=value`` lines: ``specs``,
``members``, ``launches``, ``k0_mismatches`` (K0 differs from the reference),
``k0_faults`` (K0 faults or runs out of time), ``emu_errors`` (the emulator cannot
execute an instruction there: not K0's fault, but the launch is unchecked) and
``excluded`` (members too large to emulate, or whose spec does not resolve).
Exit status 0 when k0_mismatches, k0_faults and emu_errors are all 0.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

SETS = {"corpus": HERE / "kernels", "naive": HERE / "kernels_naive"}


def spec_paths(which: str, names: list[str] | None) -> list[Path]:
    dirs = list(SETS.values()) if which == "all" else [SETS[which]]
    paths = sorted(p for d in dirs for p in d.glob("*/spec.toml"))
    if names:
        by = {}
        for p in paths:
            by.setdefault(p.parent.name, []).append(p)
        unknown = [n for n in names if n not in by]
        if unknown:
            raise SystemExit(f"check_families: no spec named {', '.join(unknown)}")
        paths = [p for n in names for p in by[n]]
    return paths


def check_spec(path: Path, size: str, seed: int, inputs: list[int]) -> tuple[list[str], dict]:
    """Lines and counts for one spec: K0 against the reference at every member."""
    from asmevo.emu.run.launch import Emulator, check_size
    from asmevo.errors import AsmevoError
    from asmevo.launch.check import check_outputs
    from asmevo.launch.spec import family_space, make_inputs

    name = f"{path.parent.parent.name}/{path.parent.name}"
    counts = dict(members=0, launches=0, k0_mismatches=0, k0_faults=0, emu_errors=0, excluded=0)
    lines = []
    try:
        space = family_space(path, size)
        members = space.members(seed)
    except AsmevoError as exc:
        counts["excluded"] += 1
        return [f"{name}: FAMILY ERROR {exc}"], counts
    if not members:
        lines.append(f"{name}: no members ({space.family.describe()})")
    emulators: dict[Path, Emulator] = {}
    for m in members:
        counts["members"] += 1
        head = f"{name} {m.label} ({m.why})"
        try:
            spec = space.resolve(m)
            check_size(spec)
        except AsmevoError as exc:
            counts["excluded"] += 1
            lines.append(f"{head}: excluded: {' '.join(str(exc).split())[:160]}")
            continue
        emu = emulators.get(spec.code_object)
        if emu is None:
            emu = emulators[spec.code_object] = Emulator(spec.code_object)
        for s in inputs:
            counts["launches"] += 1
            args = make_inputs(spec, s)
            t0 = time.perf_counter()
            res = emu.launch(spec, args)
            dt = time.perf_counter() - t0
            where = f"{head} seed {s} grid {spec.grid} block {spec.block}"
            if not res.ok:
                key = "emu_errors" if res.status == "unsupported" else "k0_faults"
                counts[key] += 1
                lines.append(f"{where}: K0 {res.status.upper()}: {' '.join(res.message.split())[:200]}")
                continue
            want = spec.expected({k: (v.copy() if isinstance(v, np.ndarray) else v)
                                  for k, v in args.items()})
            bad = [c for c in check_outputs(spec, res.outputs, want) if not c.ok]
            if bad:
                counts["k0_mismatches"] += 1
                lines.append(f"{where}: MISMATCH {'; '.join(c.detail for c in bad)[:240]}")
            else:
                lines.append(f"{where}: ok ({res.instructions_executed} wave-instructions, "
                             f"{dt:.2f} s)")
    return lines, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", help="comma-separated spec folder names (default: all of --set)")
    ap.add_argument("--set", default="all", choices=["all", *SETS])
    ap.add_argument("--size", default="small", help="the size under check (default: small)")
    ap.add_argument("--seed", type=int, default=0, help="the family seed (default 0)")
    ap.add_argument("--inputs", default="0", help="input seeds per member (default 0)")
    ap.add_argument("--jobs", type=int, default=1, help="specs checked in parallel")
    a = ap.parse_args(argv)
    names = [n for n in (a.kernels or "").split(",") if n]
    paths = spec_paths(a.set, names or None)
    inputs = [int(s) for s in a.inputs.split(",") if s.strip()]
    total = dict(specs=0, members=0, launches=0, k0_mismatches=0, k0_faults=0, emu_errors=0,
                 excluded=0)
    jobs = [(p, a.size, a.seed, inputs) for p in paths]
    if a.jobs > 1:
        with ProcessPoolExecutor(a.jobs) as pool:
            results = pool.map(check_spec, *zip(*jobs))
            results = list(results)
    else:
        results = (check_spec(*j) for j in jobs)
    for lines, counts in results:
        total["specs"] += 1
        for k, v in counts.items():
            total[k] += v
        for ln in lines:
            print(ln, flush=True)
    for k, v in total.items():
        print(f"{k}={v}")
    return 0 if total["k0_mismatches"] == total["k0_faults"] == total["emu_errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
