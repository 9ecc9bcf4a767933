"""``asmevo emulate SPEC``: run one launch spec on the emulator.

Prints a summary (verdict, time, waves, instructions executed) and, with
``--out DIR``, writes every buffer's final contents as ``DIR/<name>.npy``.
``--check`` compares the written buffers with the spec's reference
(:mod:`asmevo.launch.check`: bits for exact specs, the tolerance otherwise);
``--seeds 0,1,2`` runs the verifier's seeded input sets, scalar draws included.
The lead wires :func:`add_parser` / :func:`main` into ``asmevo/cli.py``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from asmevo.emu.run.launch import Emulator
from asmevo.launch.spec import add_launch_arguments, launch_from_arguments, make_inputs


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("emulate", help="run a launch spec on the CPU emulator",
                              description=__doc__.split("\n\n")[0])
    add_launch_arguments(p, "run")
    p.add_argument("--seeds", help="comma-separated input seeds to run one after another "
                                   "(default: --seed)")
    p.add_argument("--max-instructions", type=int, default=None,
                   help="wave-instruction budget (default: scales with the grid)")
    p.add_argument("--out", help="directory for <buffer>.npy outputs (of the last seed)")
    p.add_argument("--check", action="store_true", help="compare with the spec's reference")
    p.add_argument("--nan-equal", action="store_true",
                   help="with --check: a NaN output matches any NaN the reference gives")
    p.add_argument("--approx-variant", type=int, default=0, metavar="K",
                   help="member K of the approximate-instruction families (0: correctly "
                        "rounded; see docs/emulator.md)")
    p.set_defaults(func=main)
    return p


def _seeds(args) -> list[int]:
    from asmevo.launch.spec import SpecError
    if not args.seeds:
        return [args.seed]
    try:
        return [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise SpecError(f"--seeds must be comma-separated integers, not {args.seeds!r}") \
            from None


def main(args: argparse.Namespace) -> int:
    spec, co_path = launch_from_arguments(args)
    emu = Emulator(co_path)
    rc = 0
    for seed in _seeds(args):
        rc = max(rc, _one(args, spec, co_path, emu, seed))
    return rc


def _one(args, spec, co_path, emu, seed: int) -> int:
    from asmevo.launch.check import check_outputs
    inputs = make_inputs(spec, seed)
    res = emu.launch(spec, inputs, max_instructions=args.max_instructions,
                     approx_variant=args.approx_variant)
    rate = res.lane_instructions / res.seconds / 1e6 if res.seconds > 0 else 0.0
    scalars = ", ".join(f"{a.name}={inputs[a.name]}" for a in spec.args if a.kind == "scalar")
    print(f"{spec.name} [{args.size}] {co_path.name} seed {seed}"
          f"{' (' + scalars + ')' if scalars else ''}: {res.status}  {res.seconds:.3f} s  "
          f"{res.waves} waves  {res.instructions_executed} wave-instructions  "
          f"{res.lane_instructions} lane-instructions ({rate:.1f} M/s)")
    if not res.ok:
        print(f"  {res.message}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, arr in res.outputs.items():
            np.save(out / f"{name}.npy", arr)
        print(f"  wrote {len(res.outputs)} buffers to {out}")
    rc = 0 if res.ok else 1
    if args.check and res.ok:
        expected = spec.expected({k: (v.copy() if isinstance(v, np.ndarray) else v)
                                  for k, v in inputs.items()})
        for c in check_outputs(spec, res.outputs, expected, nan_equal=args.nan_equal):
            mode = "bit for bit" if spec.exact else "within tolerance"
            print(f"  {c.name}: {'matches' if c.ok else 'DIFFERS FROM'} the reference "
                  f"({mode}; {c.detail})")
            rc = rc or (0 if c.ok else 1)
    return rc
