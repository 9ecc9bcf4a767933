"""``asmevo emulate SPEC``: run one launch spec on the emulator.

Prints a summary (verdict, time, waves, instructions executed) and, with
``--out DIR``, writes every buffer's final contents as ``DIR/<name>.npy``.
The lead wires :func:`add_parser` / :func:`main` into ``asmevo/cli.py``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from asmevo.emu.launch import Emulator
from asmevo.verify.spec import (add_launch_arguments, launch_from_arguments, make_inputs,
                                 values_f64)


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("emulate", help="run a launch spec on the CPU emulator",
                              description=__doc__.split("\n\n")[0])
    add_launch_arguments(p, "run")
    p.add_argument("--max-instructions", type=int, default=None,
                   help="wave-instruction budget (default: scales with the grid)")
    p.add_argument("--out", help="directory for <buffer>.npy outputs")
    p.add_argument("--check", action="store_true", help="compare with the spec's reference")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    spec, co_path = launch_from_arguments(args)
    inputs = make_inputs(spec, args.seed)
    res = Emulator(co_path).launch(spec, inputs, max_instructions=args.max_instructions)
    rate = res.lane_instructions / res.seconds / 1e6 if res.seconds > 0 else 0.0
    print(f"{spec.name} [{args.size}] {co_path.name}: {res.status}  {res.seconds:.3f} s  "
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
        ref = spec.reference()(inputs)
        dtypes = {a.name: a.dtype for a in spec.args}
        for name, want in ref.items():
            got = values_f64(dtypes.get(name, ""), res.outputs[name])
            if spec.exact:
                good = np.array_equal(got, np.asarray(want, np.float64))
            else:
                good = bool(np.all(np.abs(got - want)
                                   <= spec.atol + spec.rtol * np.abs(want)))
            print(f"  {name}: {'matches' if good else 'DIFFERS FROM'} the reference")
            rc = rc or (0 if good else 1)
    return rc
