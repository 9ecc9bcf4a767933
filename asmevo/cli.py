"""The asmevo command: one subcommand per stage of the pipeline.

Every expected failure is an :class:`~asmevo.errors.AsmevoError`: it prints one
line on stderr and exits with code 2. Anything else is a bug and keeps its
traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from asmevo.errors import AsmevoError


def _cmd_inspect(args: argparse.Namespace) -> int:
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.summary import kernel_summaries, render

    co = load(args.file)
    if args.kernel:
        co.kernel(args.kernel)  # unknown names fail before any tool runs
    sums = kernel_summaries(co, recover(co), args.kernel)
    print(json.dumps(sums, indent=2) if args.json else render(sums))
    return 0


def _cmd_roundtrip(args: argparse.Namespace) -> int:
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.targets.amdgpu.roundtrip import compare

    results, ok = [], True
    for f in args.files:
        t0 = time.perf_counter()
        try:
            co = load(f)
            program = recover(co)
            rebuilt = load(build_program(program, cache=False), path=f"{f} (rebuilt)")
            cmp = compare(co, rebuilt)
            raw = sum(i.raw for fn in program.functions for i in fn.instructions)
            res = cmp.as_dict() | {"raw_instructions": raw,
                                   "seconds": round(time.perf_counter() - t0, 4)}
        except AsmevoError as exc:
            res = {"path": f, "identical": False, "error": str(exc)}
        ok &= bool(res["identical"])
        results.append(res)
        if not args.json:
            if "error" in res:
                print(f"ERROR      {f}: {res['error']}")
            elif res["identical"]:
                parts = ", ".join(res["parts"])
                print(f"IDENTICAL  {f}  ({parts}; {res['seconds']:.2f}s)")
            else:
                print(f"DIFFERENT  {f}")
                for d in res["differences"]:
                    print(f"    {d['text']}")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if ok else 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="asmevo", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="kernels, ABI, registers, occupancy of a code object")
    s.add_argument("file")
    s.add_argument("--kernel")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_inspect)

    s = sub.add_parser("roundtrip", help="recover + rebuild; report byte identity")
    s.add_argument("files", nargs="+")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_roundtrip)

    for module in _EXTENSIONS:
        try:
            mod = __import__(module, fromlist=["add_parser"])
        except ModuleNotFoundError as exc:   # a stage not installed yet; a broken one still fails
            if exc.name != module:
                raise
            continue
        mod.add_parser(sub)
    return p


# subcommands that live beside the stage they drive: module.add_parser(subparsers)
_EXTENSIONS = ("asmevo.emu.command", "asmevo.profile_command", "asmevo.verify.command",
               "asmevo.engine.command", "asmevo.ablate.command", "asmevo.serve.command")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AsmevoError as exc:
        print(f"asmevo {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"asmevo {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
