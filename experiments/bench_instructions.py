#!/usr/bin/env python3
"""Instructions per verified candidate, counted by valgrind: a figure that a shared or
throttled machine does not move.

    python experiments/bench_instructions.py [--root CHECKOUT] [--against OTHER]
        [--spec experiments/kernels/softmax] [--candidates 2,6] [--proof off]

Wall and CPU time on this VM drift by up to 3.5x between days and by 5-10% between
back-to-back runs, more than most changes to the emulator make. This runs
``bench_verify.py`` of a checkout under ``valgrind --tool=callgrind`` (no cache
simulation: instructions executed, ``Ir``) twice, with the two candidate counts of
``--candidates``, and prints the instructions per candidate of the parent (apply, static
gate, ABI check, build glue) and of the processes it forks (the evaluating worker: the
differential, every emulator pass; older checkouts forked a child per candidate, summed
alike), each the difference of the two runs divided by the difference of
the candidate counts, so start-up and K0's reference runs cancel out. Processes a run
``exec``s (llvm-mc, ld.lld) are not counted: their cost is the build's, and the same in
both checkouts.

Both runs use ``PYTHONHASHSEED=0``, one BLAS thread (OpenBLAS's idle threads spin, and
valgrind would count their spinning) and compiled bytecode: a warm-up run without valgrind
fills a bytecode cache kept per checkout (``PYTHONPYCACHEPREFIX``), so a checkout without
``.pyc`` files (this machine sets ``PYTHONDONTWRITEBYTECODE=1``) is not charged for
compiling its modules. Instructions are not time (a memory-bound numpy pass runs fewer
instructions per second than the interpreter), but the same work gives the same count:
three runs of one checkout agreed to 0.02%.

``--against`` counts another checkout the same way and prints the ratios. Ends with
``parent_instructions_per_candidate=``, ``worker_instructions_per_candidate=`` and, with
``--against``, ``worker_ratio_against=`` (the other's count over this one's).
Needs valgrind (Debian: ``apt-get install valgrind``); about a minute per run.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.M)


def _env(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # each run its own fresh cache (bench_verify makes one): a run never reuses another's
    env.pop("ASMEVO_CACHE_DIR", None)
    tag = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"asmevo-pyc-{tag}")
    return env


def _bench(root: Path, spec: str, n: int, proof: str = "on") -> list[str]:
    """bench_verify's command; ``proof`` off counts the differential alone."""
    script = root / "experiments" / "bench_verify.py"
    extra = []
    # checkouts from before the prove stage have no --proof and no prover to turn off
    if proof == "off" and "--proof" in script.read_text():
        extra = ["--proof", "off"]
    return [sys.executable, str(script), "--spec", spec, "--repeat", str(n)] + extra


def counts(root: Path, spec: str, n: int, valgrind: str, proof: str = "on") -> tuple[int, int]:
    """(parent, forked processes) instructions of one ``bench_verify.py --repeat n`` of
    ``root``."""
    out = Path(tempfile.mkdtemp(prefix="asmevo-callgrind-"))
    try:
        cmd = [valgrind, "--tool=callgrind", "--dump-instr=no", "--compress-strings=no",
               f"--callgrind-out-file={out}/cg.%p"] + _bench(root, spec, n, proof)
        run = subprocess.run(cmd, env=_env(root), cwd=root, capture_output=True)
        if run.returncode != 0:
            tail = run.stderr.decode(errors="replace").strip().splitlines()[-3:]
            raise SystemExit(f"{root}: bench_verify under valgrind failed: {' | '.join(tail)}")
        files = sorted(out.glob("cg.*"), key=lambda p: int(p.suffix[1:]))
        if len(files) < 2:
            raise SystemExit(f"{root}: expected a parent and its evaluating process(es), "
                             f"callgrind wrote {len(files)} profile(s)")
        ir = []
        for f in files:
            m = _SUMMARY.search(f.read_bytes())
            if m is None:
                raise SystemExit(f"{f}: no callgrind summary line")
            ir.append(int(m.group(1)))
        # the parent started first (the lowest pid); what it forked evaluates (one warm
        # worker now; a child per candidate in older checkouts): summed
        return ir[0], sum(ir[1:])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def per_candidate(root: Path, spec: str, lo: int, hi: int, valgrind: str,
                  proof: str = "on") -> tuple[float, float]:
    warm = subprocess.run(_bench(root, spec, 1, proof), env=_env(root), cwd=root,
                          capture_output=True)
    if warm.returncode != 0:
        raise SystemExit(f"{root}: bench_verify failed: "
                         f"{warm.stderr.decode(errors='replace').strip()[-300:]}")
    p_lo, w_lo = counts(root, spec, lo, valgrind, proof)
    p_hi, w_hi = counts(root, spec, hi, valgrind, proof)
    d = hi - lo
    return (p_hi - p_lo) / d, (w_hi - w_lo) / d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT), help="the checkout counted")
    ap.add_argument("--against", default=None, help="another checkout, counted alike")
    ap.add_argument("--spec", default="experiments/kernels/softmax",
                    help="a kernel folder, relative to each checkout")
    ap.add_argument("--candidates", default="2,6",
                    help="the two candidate counts (distinct, each >= 1)")
    ap.add_argument("--proof", choices=("on", "off"), default="on",
                    help="off: bench_verify --proof off where the checkout has a prover")
    a = ap.parse_args()
    try:
        lo, hi = sorted(int(x) for x in a.candidates.split(","))
    except ValueError:
        print(f"--candidates {a.candidates!r}: expected two integers like 2,6",
              file=sys.stderr)
        return 2
    if lo < 1 or lo == hi:
        print(f"--candidates {a.candidates!r}: need two distinct counts >= 1", file=sys.stderr)
        return 2
    roots = [Path(a.root).resolve()] + ([Path(a.against).resolve()] if a.against else [])
    for r in roots:
        if not (r / "experiments" / "bench_verify.py").is_file():
            print(f"{r}: not a checkout with experiments/bench_verify.py", file=sys.stderr)
            return 2
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind not found (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    got = {}
    for r in roots:
        got[r] = per_candidate(r, a.spec, lo, hi, valgrind, a.proof)
        print(f"{r}: parent {got[r][0]:.6g}, worker {got[r][1]:.6g} instructions per "
              f"candidate ({a.spec}, {lo} and {hi} candidates)", flush=True)
    parent, worker = got[roots[0]]
    if a.against:
        op, ow = got[roots[1]]
        print(f"parent_ratio_against={op / parent:.3f}")
        print(f"worker_ratio_against={ow / worker:.3f}")
    print(f"parent_instructions_per_candidate={parent:.6g}")
    print(f"worker_instructions_per_candidate={worker:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
