"""``asmevo spec init CODE_OBJECT [--kernel NAME]`` and ``asmevo spec check SPEC``.

``init`` prints a launch spec skeleton written from the code object's metadata
and descriptor (redirect it into ``spec.toml``); ``check`` prints one line per
problem left in a spec and exits 2 if there is any.
"""
from __future__ import annotations

import os
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("spec", help="write a launch spec skeleton, or check a spec")
    actions = p.add_subparsers(dest="spec_command", required=True)
    s = actions.add_parser("init", help="print a spec skeleton for one kernel of a code object")
    s.add_argument("code_object")
    s.add_argument("--kernel", help="kernel name (needed when the object has several)")
    s.set_defaults(func=_init)
    s = actions.add_parser("check", help="list what a spec still lacks or gets wrong")
    s.add_argument("spec", help="spec.toml (or its folder)")
    s.set_defaults(func=_check)


def _init(args) -> int:
    from asmevo.targets.amdgpu.codeobject import load
    from asmevo.verify.skeleton import skeleton

    co = load(args.code_object)
    ref = os.path.relpath(Path(args.code_object).resolve(), Path.cwd())
    print(skeleton(co, args.kernel, code_object_ref=ref), end="")
    return 0


def _check(args) -> int:
    from asmevo.verify.skeleton import advice, check

    problems = check(args.spec)
    for line in problems:
        print(f"{args.spec}: {line}")
    if not problems:
        for line in advice(args.spec):
            print(f"{args.spec}: warning: {line}")
        print(f"{args.spec}: ok")
    return 2 if problems else 0
