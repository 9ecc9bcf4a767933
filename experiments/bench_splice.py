#!/usr/bin/env python3
"""Spliced rebuilds against llvm-mc + ld.lld: how many builds skip the tools, and
whether every one of them is byte for byte the tools' object.

    python experiments/bench_splice.py [--chains 8] [--length 4] [--seed 1]
        [--objects a.co,b.co]

For every corpus code object (experiments/kernels/*/*.co; ``--objects`` picks by file
name), ``--chains`` random edit chains of up to ``--length`` edits on its first
kernel, each edit applied to the previous candidate as a search's lineage does:
an ``s_nop`` inserted before an instruction, two adjacent instructions swapped, an
instruction replaced by another text of the kernel, an ``s_nop`` or ``s_waitcnt``
deleted. Every candidate of every chain is built twice, through
:func:`asmevo.targets.amdgpu.build.build_program` (splicing into a layout the tools
built before, else the tools, which teach their layout) and with ``cache=False``
(the tools, always), in a fresh build cache. Prints per object its builds, how
many were spliced and how many differ, and ends with ``builds=``, ``spliced=``,
``differ=`` (must be 0) and ``tool_seconds_per_build=`` (a tool build's wall time here).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _edit(rng: random.Random, program, kernel: str):
    """One random edit of ``kernel`` in ``program`` (an :class:`asmevo.edits.Edit`), or
    None where the kernel offers no place for the kind drawn."""
    from asmevo.edits import Edit
    ins = program.function(kernel).instructions
    n = len(ins)
    kind = rng.choice(("nop", "swap", "replace", "delete"))
    if kind == "nop" or n < 2:
        i = rng.randrange(n)
        return Edit(kernel, i, i + 1, (f"s_nop {rng.randrange(8)}", ins[i].text))
    if kind == "swap":
        i = rng.randrange(n - 1)
        if ins[i].is_branch or ins[i + 1].is_branch:
            return None
        return Edit(kernel, i, i + 2, (ins[i + 1].text, ins[i].text))
    if kind == "replace":
        i = rng.randrange(n)
        if ins[i].is_branch:
            return None
        other = ins[rng.randrange(n)]
        return None if other.is_branch else Edit(kernel, i, i + 1, (other.text,))
    gone = [i for i, x in enumerate(ins) if x.mnemonic in ("s_nop", "s_waitcnt")]
    if not gone:
        return None
    i = rng.choice(gone)
    return Edit(kernel, i, i + 1, ())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=8, help="edit chains per object")
    ap.add_argument("--length", type=int, default=4, help="edits per chain, at most")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--objects", default="", help="comma-separated file names (all)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ["ASMEVO_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_splice.")
    from asmevo.errors import AsmevoError
    from asmevo.targets.amdgpu import load, recover, splice
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.targets.amdgpu.edits import apply_edits

    hits: list[bool] = []
    real = splice.spliced

    def counted(*args, **kw):
        out = real(*args, **kw)
        hits.append(out is not None)
        return out
    splice.spliced = counted
    wanted = set(filter(None, a.objects.split(",")))
    objects = [p for p in sorted((ROOT / "experiments" / "kernels").glob("*/*.co"))
               if not wanted or p.name in wanted]
    rng = random.Random(a.seed)
    builds = spliced = differ = 0
    tool_seconds = 0.0
    for path in objects:
        k0 = load(path)
        program = recover(k0)
        kernel = k0.kernels[0].name
        b0, s0, d0 = builds, spliced, differ
        for _ in range(a.chains):
            cand = program
            for _ in range(rng.randint(1, a.length)):
                e = _edit(rng, cand, kernel)
                if e is None:
                    continue
                try:
                    nxt = apply_edits(cand, (e,))
                except AsmevoError:
                    continue
                del hits[:]
                try:
                    fast = build_program(nxt)
                except AsmevoError:
                    continue        # the tools refuse it too (checked below)
                t0 = time.perf_counter()
                slow = build_program(nxt, cache=False)
                tool_seconds += time.perf_counter() - t0
                builds += 1
                spliced += any(hits)
                if fast != slow:
                    differ += 1
                    print(f"  {path.name}: a spliced build differs from the tools' "
                          f"({e.start}:{e.end} -> {list(e.lines)})")
                cand = nxt
        print(f"{path.parent.name}/{path.name}: builds {builds - b0}, spliced "
              f"{spliced - s0}, differ {differ - d0}", flush=True)
    print(f"objects={len(objects)}")
    print(f"builds={builds}")
    print(f"spliced={spliced}")
    print(f"differ={differ}")
    print(f"tool_seconds_per_build={tool_seconds / max(builds, 1):.4f}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
