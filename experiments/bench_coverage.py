#!/usr/bin/env python3
"""Emulator decode coverage over a folder of AMDGPU code objects.

    python experiments/bench_coverage.py DIR [--jobs J] [--verbose] [--no-cache]

Every ``*.co`` / ``*.hsaco`` under DIR (recursive) is disassembled with
llvm-objdump and every instruction of every function goes through the
emulator's decoder (:func:`asmevo.emu.isa.decode.decode_one`, with the kernel's
``accum_offset``): an instruction counts as unsupported when the decoder
yields no executor for it (no builder, or a builder that refuses the operand
form). VALU instructions inside a VGPR-index-mode region (between
s_set_gpr_idx_on and _off) are also decoded in their indexed form, which the
emulator builds at run time. Refusals that depend on data (a float atomic
meeting a denormal, an LDS address past the allocation) are not counted. Disassembly listings are cached by file content and LLVM version under
``$ASMEVO_CACHE_DIR/coverage`` so a rerun only decodes. Objects that cannot be
loaded or disassembled are counted as ``failed`` and named.

Ends with ``objects=``, ``decoded_fully=``, ``instructions=`` and
``unsupported=`` lines (one ``name=value`` per headline figure).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asmevo import knobs  # noqa: E402
from asmevo.errors import AsmevoError  # noqa: E402

SUFFIXES = (".co", ".hsaco")


def listing(path: Path, use_cache: bool) -> dict:
    """The object's processor and (function, accum_offset, instruction texts) per
    function, cached by content and LLVM version."""
    from asmevo.targets.amdgpu.codeobject import load
    from asmevo.targets.amdgpu.recover import recover
    from asmevo.targets.amdgpu.toolchain import find_toolchain
    data = path.read_bytes()
    tc = find_toolchain()
    key = hashlib.sha256(data + tc.version.encode()).hexdigest()
    cache = knobs.cache_dir() / "coverage" / f"{key}.json"
    if use_cache and cache.is_file():
        return json.loads(cache.read_text())
    co = load(data, path=str(path))
    prog = recover(co, tc=tc, verify=False)
    funcs = []
    for fn in prog.functions:
        acc = fn.kernel.descriptor.accum_offset if fn.kernel is not None else 0
        funcs.append((fn.name, acc, [i.text for i in fn.instructions]))
    out = {"processor": co.target.processor, "functions": funcs}
    if use_cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(cache)
    return out


def _index_mode_refusals(texts: list[str], name: str, acc: int, processor: str) -> list[str]:
    """VALU instructions between s_set_gpr_idx_on and _off that index mode would refuse.

    Index mode re-decodes an instruction at run time with shifted registers; this
    tries that for the mode the preceding s_set_gpr_idx_on sets (index 1).
    """
    from asmevo.emu.isa.decode import decode_one
    from asmevo.emu.isa.insn import parse
    from asmevo.emu.errors import EmulatorError
    from asmevo.emu.isa.wavemode import _idx_mode, indexed_text
    bad, mode = [], None
    for i, text in enumerate(texts):
        head = text.split(None, 1)[0] if text.strip() else ""
        if head == "s_set_gpr_idx_on":
            ins = parse(text, index=i, address=None, kernel=name, accum_offset=acc,
                        processor=processor)
            mode = _idx_mode(ins, ins.raw_ops[1])
        elif head == "s_set_gpr_idx_off":
            mode = None
        elif mode is not None and head.startswith("v_"):
            try:
                ins = parse(text, index=i, address=None, kernel=name, accum_offset=acc,
                            processor=processor)
                d = decode_one(indexed_text(ins, 1, mode), index=i, address=None, kernel=name,
                               accum_offset=acc, processor=processor)
                if d.ctl == "fault":
                    bad.append(head)
            except EmulatorError:
                bad.append(head)
    return bad


def cover(path: Path, use_cache: bool) -> dict:
    """Decode one object: instruction count and unsupported mnemonics (with a reason each)."""
    from asmevo.emu.isa.decode import decode_one
    try:
        lst = listing(path, use_cache)
    except (AsmevoError, OSError) as exc:
        return {"path": str(path), "failed": str(exc).splitlines()[0]}
    n = 0
    bad: Counter = Counter()
    reasons: dict[str, str] = {}
    processor = lst["processor"]
    for name, acc, texts in lst["functions"]:
        for i, text in enumerate(texts):
            n += 1
            d = decode_one(text, index=i, address=None, kernel=name, accum_offset=acc,
                           processor=processor)
            if d.ctl == "fault":
                bad[d.mnemonic] += 1
                reasons.setdefault(d.mnemonic, text)
        if any(t.startswith("s_set_gpr_idx_on") for t in texts):
            for m in _index_mode_refusals(texts, name, acc, processor):
                bad[f"{m} (in VGPR index mode)"] += 1
                reasons.setdefault(f"{m} (in VGPR index mode)", m)
    return {"path": str(path), "instructions": n, "unsupported": dict(bad), "reasons": reasons}


def _work(args):
    return cover(*args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="unsupported mnemonics per file")
    ap.add_argument("--no-cache", action="store_true", help="disassemble again")
    ap.add_argument("--top", type=int, default=60, help="mnemonics listed (default 60)")
    args = ap.parse_args(argv)
    root = Path(args.dir)
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    files = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    if not files:
        print(f"{root}: no code objects (*.co, *.hsaco)", file=sys.stderr)
        return 2
    work = [(p, not args.no_cache) for p in files]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            results = list(ex.map(_work, work, chunksize=4))
    else:
        results = [_work(w) for w in work]
    total = Counter()
    files_with: Counter = Counter()
    reasons: dict[str, str] = {}
    failed = [r for r in results if "failed" in r]
    ok = [r for r in results if "failed" not in r]
    for r in ok:
        total.update(r["unsupported"])
        files_with.update(r["unsupported"].keys())
        for k, v in r["reasons"].items():
            reasons.setdefault(k, v)
        if args.verbose and r["unsupported"]:
            rel = os.path.relpath(r["path"], root)
            items = ", ".join(f"{k} {v}" for k, v in sorted(r["unsupported"].items(),
                                                           key=lambda kv: -kv[1]))
            print(f"{rel}: {items}")
    for r in failed:
        print(f"failed: {os.path.relpath(r['path'], root)}: {r['failed']}")
    ninsn = sum(r["instructions"] for r in ok)
    nbad = sum(total.values())
    if total:
        print(f"unsupported mnemonics ({len(total)}), by instruction count:")
        for m, cnt in total.most_common(args.top):
            print(f"  {cnt:9d}  {files_with[m]:5d} files  {m}    e.g. {reasons[m][:150]}")
    print(f"objects={len(results)}")
    print(f"failed={len(failed)}")
    print(f"decoded_fully={sum(1 for r in ok if not r['unsupported'])}")
    print(f"instructions={ninsn}")
    print(f"unsupported={nbad}")
    print(f"unsupported_mnemonics={len(total)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
