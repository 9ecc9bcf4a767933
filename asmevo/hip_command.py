"""``asmevo hip SRC.hip [--out K.co] [--arch gfx942]``: a HIP kernel to a code object, no ROCm.

The source includes ``<hip/hip_runtime.h>`` as with ROCm; the header asmevo ships
(:mod:`asmevo.targets.amdgpu.hip`) stands in for ROCm's. docs/own_kernel.md walks from
here to a search.
"""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from asmevo.errors import AsmevoError
from asmevo.targets.amdgpu.processors import CDNA2, DEFAULT


def main(args: argparse.Namespace) -> int:
    from asmevo.targets.amdgpu import load
    from asmevo.targets.amdgpu.hip import INCLUDE, build_hip

    if args.include_dir:
        print(INCLUDE)
        return 0
    if not args.source:
        raise AsmevoError("give a HIP source file (or --include-dir)")
    source = Path(args.source)
    if not source.is_file():
        raise AsmevoError("not a file", path=str(source))
    out = Path(args.out) if args.out else source.with_name(f"{source.stem}.{args.arch}.co")
    cmd = build_hip(source, out, args.arch, tuple(args.define), tuple(args.include), args.opt)
    co = load(out)
    print(f"built {out} ({out.stat().st_size:,} bytes; {args.arch}; kernels: "
          f"{', '.join(co.kernel_names)})")
    if args.verbose:
        print(shlex.join(cmd))
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("hip", help="compile a HIP kernel to a code object (no ROCm)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("source", nargs="?", help="the kernel's source (.hip)")
    p.add_argument("--out", help="the code object (default: SRC's stem.ARCH.co beside it)")
    p.add_argument("--arch", default=DEFAULT, help=f"{DEFAULT} (default) or {CDNA2}")
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    p.add_argument("-O", dest="opt", default="3", choices=["0", "1", "2", "3"])
    p.add_argument("--include-dir", action="store_true",
                   help="print the folder holding hip/hip_runtime.h (for your own clang line)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the clang command; on error, clang's whole output")
    p.set_defaults(func=main)
    return p
