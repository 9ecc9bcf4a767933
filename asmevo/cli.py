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
    from asmevo.targets.amdgpu.route import with_route
    from asmevo.targets.amdgpu.summary import kernel_summaries, render
    from asmevo.targets.amdgpu.toolchain import find_toolchain

    co = load(args.file)
    if args.kernel:
        co.kernel(args.kernel)  # unknown names fail before any tool runs
    tc = find_toolchain(co.target.processor)
    sums = kernel_summaries(co, with_route(recover(co, tc=tc), tc=tc), args.kernel,
                            llvm=tc.describe())
    print(json.dumps(sums, indent=2) if args.json else render(sums))
    return 0


def _roundtrip_one(f: str) -> dict:
    """Recover + rebuild one file: the comparison, the route its candidates take, the LLVM."""
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.route import decide
    from asmevo.targets.amdgpu.toolchain import find_toolchain

    t0 = time.perf_counter()
    co = load(f)
    tc = find_toolchain(co.target.processor)
    program = recover(co, tc=tc)
    route, cmp = decide(program, tc=tc, cache=False)
    res = cmp.as_dict() if cmp is not None else {"path": f, "identical": False, "parts": {},
                                                  "differences": []}
    raw = sum(i.raw for fn in program.functions for i in fn.instructions)
    return res | {"raw_instructions": raw, "route": str(route),
                  "kernels": {k: str(route) for k in co.kernel_names},
                  "llvm": tc.describe(), "seconds": round(time.perf_counter() - t0, 4)}


def _cmd_roundtrip(args: argparse.Namespace) -> int:
    results, ok, bad_input = [], True, False
    for f in args.files:
        try:
            res = _roundtrip_one(f)
        except AsmevoError as exc:
            res = {"path": f, "identical": False,
                   "error": exc.message if exc.path == f else str(exc)}
            bad_input = True
        ok &= bool(res["identical"])
        results.append(res)
        if not args.json:
            if "error" in res:
                print(f"ERROR      {f}: {res['error']}")
            elif res["identical"]:
                parts = ", ".join(res["parts"])
                print(f"IDENTICAL  {f}  ({parts}; {res['seconds']:.2f}s; {res['llvm']}; "
                      f"route {res['route']})")
            else:
                print(f"PATCH      {f}  ({res['llvm']}; route {res['route']})")
                for d in res["differences"]:
                    print(f"    {d['text']}")
    if args.json:
        print(json.dumps(results, indent=2))
    return 2 if bad_input else 0 if ok else 1


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
               "asmevo.verify.spec_command",
               "asmevo.engine.command", "asmevo.ablate.command")


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
