"""``asmevo profile SPEC``: per-instruction costs and the hot windows of one launch.

Cycles are the timing model's (*modeled* cycles, labeled so everywhere) unless
``--pc-sampling`` / ``--thread-trace`` give a rocprofv3 CSV from a GPU run, in
which case they are *measured*.
"""
from __future__ import annotations

import argparse
import json

from asmevo.files import read_input
from asmevo.profile.model import ProfileError
from asmevo.profile.modeled import profile_launch
from asmevo.profile.rocprof import read_pc_sampling_csv, read_thread_trace_csv
from asmevo.profile.windows import hot_windows, render_windows
from asmevo.launch.spec import add_launch_arguments, launch_from_arguments, make_inputs


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("profile", help="hot windows of a kernel (modeled or measured)",
                              description=__doc__.split("\n\n")[0])
    add_launch_arguments(p, "profile")
    p.add_argument("--top", type=int, default=5, help="windows to show (default 5)")
    p.add_argument("--max-len", type=int, default=48, help="longest window (default 48)")
    p.add_argument("--pc-sampling", help="rocprofv3 PC-sampling CSV (measured profile)")
    p.add_argument("--thread-trace", help="per-instruction thread-trace CSV (measured profile)")
    p.add_argument("--pc-base", type=lambda s: int(s, 0), default=0,
                   help="load address to subtract from absolute PCs in the CSV")
    p.add_argument("--json", action="store_true", help="windows as JSON")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    from asmevo.targets.amdgpu import load, recover

    spec, co_path = launch_from_arguments(args)
    data = read_input(co_path, what="code object")
    program = recover(load(data, path=str(co_path)), verify=False)
    if args.pc_sampling and args.thread_trace:
        raise ProfileError("give --pc-sampling or --thread-trace, not both")
    if args.pc_sampling:
        prof = read_pc_sampling_csv(args.pc_sampling, program, pc_base=args.pc_base)
    elif args.thread_trace:
        prof = read_thread_trace_csv(args.thread_trace, program, pc_base=args.pc_base)
    else:
        prof = profile_launch(data, spec, make_inputs(spec, args.seed))
    windows = hot_windows(program, prof, top=args.top, max_len=args.max_len,
                          functions=[spec.kernel])
    if args.json:
        print(json.dumps({"source": prof.source, "unit": prof.unit,
                          "total": prof.total_cycles, "detail": prof.detail,
                          "windows": [w.__dict__ for w in windows]}, indent=2, default=list))
        return 0
    head = f"{spec.name} [{args.size}] {co_path.name}: {prof.total_cycles:,.0f} {prof.label}"
    if prof.source == "modeled":
        d = prof.detail
        head += (f" ({d['seconds'] * 1e6:.2f} us modeled on {d['target']}; occupancy "
                 f"{d['occupancy']} waves/SIMD; busiest CU runs {d['cu_workgroups']} of "
                 f"{d['workgroups']} workgroups)")
    else:
        head += f" ({prof.unmatched} samples off the program, {prof.mismatched} mismatched)"
    print(head)
    print(render_windows(program, prof, windows))
    return 0
