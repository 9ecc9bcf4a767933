#!/usr/bin/env python3
"""Rebuild the naive corpus (experiments/kernels_naive/): KernelBench-style first HIP ports.

    python experiments/build_naive.py [--set naive|pairs] [--only NAME ...] [--llvm-dir DIR]
                                      [--check [SIZE ...]] [--no-build]

Each folder holds ``<name>.hip`` (one thread per output, plain loops, no LDS, no vector
loads), ``spec.toml`` and ``reference.py``; this builds ``<name>.gfx942.co`` and
``<name>.gfx90a.co`` with clang (-x hip --cuda-device-only, the optimization level listed
in ``NAIVE_SOURCES``), the same deterministic, path-independent way as
``build_corpus.py``. ``--check`` then emulates every spec at the given sizes (default:
small and large) and compares with its numpy reference, as ``asmevo emulate SPEC --check``
does; the last line is ``naive_checked=<ok>/<all>``.

``--set pairs`` builds the timing-model pair variants of ``experiments/timing_pairs/``
instead (known-good / known-bad versions of one kernel, gfx942 only; the pairs are listed
in ``timing_pairs/pairs.toml`` and ranked by ``bench_timing_model.py``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAIVE_DIR = HERE / "kernels_naive"
PAIRS_DIR = HERE / "timing_pairs"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from build_corpus import HIP_TARGETS, find_llvm_dir, run  # noqa: E402

# (folder = kernel = source stem, optimization level)
NAIVE_SOURCES = [
    ("matmul", "-O3"), ("matmul_ta", "-O3"), ("matmul_tb", "-O3"), ("bmm", "-O3"),
    ("matvec", "-O3"), ("vecmat", "-O3"), ("gemm_bias_relu", "-O3"),
    ("sum_rows", "-O3"), ("sum_cols", "-O3"), ("max_rows", "-O2"), ("argmax_rows", "-O3"),
    ("mean_cols", "-O3"), ("argmin_cols", "-O2"),
    ("softmax_rows", "-O3"), ("log_softmax_rows", "-O3"),
    ("layernorm_rows", "-O3"), ("rmsnorm_rows", "-O3"), ("batchnorm_nchw", "-O3"),
    ("groupnorm", "-O3"), ("instancenorm", "-O3"), ("instancenorm_inplace", "-O3"),
    ("conv1d_naive", "-O3"), ("conv2d_naive", "-O3"), ("depthwise_conv2d", "-O3"),
    ("maxpool2d", "-O3"), ("avgpool2d", "-O3"),
    ("scale_add_gelu", "-O3"), ("swish_scale", "-O3"), ("residual_add_clamp", "-O2"),
    ("elu", "-O3"), ("leaky_relu", "-O2"),
    ("hinge_loss", "-O3"), ("mse_rows", "-O3"), ("cross_entropy_rows", "-O3"),
    ("kl_div_rows", "-O3"),
    ("cumsum_naive", "-O3"), ("transpose_naive", "-O3"),
]
PAIR_SOURCES = [
    ("copy_coalesced", "-O3"), ("copy_strided", "-O3"),
    ("transpose_lds_conflicted", "-O3"), ("transpose_lds_padded", "-O3"),
    ("colsum_serial", "-O3"), ("colsum_pipelined", "-O3"),
    ("load_u16_contig", "-O3"), ("load_u16_strided", "-O3"),
    ("store_u16_full", "-O3"), ("store_u16_partial", "-O3"),
    ("atomic_distinct", "-O3"), ("atomic_same", "-O3"),
    ("wg_stride", "-O3"), ("wg_tiny", "-O3"), ("mfma_indep", "-O3"), ("mfma_dep", "-O3"),
    ("dma_pipelined", "-O3"), ("dma_serial", "-O3"),
]
SETS = {"naive": (NAIVE_DIR, NAIVE_SOURCES, HIP_TARGETS),
        "pairs": (PAIRS_DIR, PAIR_SOURCES, ("gfx942",))}


def build(root: Path, name: str, opt: str, llvm: Path, targets) -> None:
    import hashlib

    d = root / name
    for target in targets:
        out = d / f"{name}.{target}.co"
        run([llvm / "clang", "-x", "hip", f"--offload-arch={target}", "-nogpulib", "-nogpuinc",
             "--cuda-device-only", "--no-gpu-bundle-output", opt, "-std=c++17",
             "-ffile-prefix-map=" + str(HERE) + "=.", f"-cuid=asmevo_{name}",
             f"{name}.hip", "-o", out.name], cwd=d)
        data = out.read_bytes()
        print(f"{root.name}/{name}/{out.name:40s} {len(data):7d} B  "
              f"sha256:{hashlib.sha256(data).hexdigest()[:16]}  hip {opt}", flush=True)


def check(root: Path, names: list[str], sizes: list[str], targets) -> int:
    """Emulate every spec at ``sizes`` against its reference; returns failures."""
    import numpy as np

    from asmevo.emu.run.launch import Emulator
    from asmevo.launch.spec import load_spec, make_inputs

    ok = total = 0
    for name in names:
        for size in sizes:
            for target in targets:
                total += 1
                spec = load_spec(root / name / "spec.toml", size)
                target = None if target == "gfx942" else target
                inputs = make_inputs(spec, 0)
                t0 = time.perf_counter()
                res = Emulator(spec.code_object_for(target)).launch(spec, inputs)
                good = res.ok
                why = res.message if not res.ok else ""
                if good:
                    ref = spec.reference()(inputs)
                    for out, want in ref.items():
                        got = np.asarray(res.outputs[out], np.float64)
                        want = np.asarray(want, np.float64)
                        if not np.all(np.abs(got - want) <= spec.atol + spec.rtol * np.abs(want)):
                            good, why = False, f"{out} differs from the reference"
                ok += good
                print(f"{name:20s} {size:6s} {target or 'gfx942':7s} "
                      f"{'matches' if good else 'FAILS'} ({time.perf_counter() - t0:.1f} s, "
                      f"{res.waves} waves) {why}", flush=True)
    print(f"naive_checked={ok}/{total}")
    return total - ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), default="naive")
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--llvm-dir")
    ap.add_argument("--check", nargs="*", metavar="SIZE",
                    help="emulate and compare with the references (default sizes: small large)")
    ap.add_argument("--no-build", action="store_true", help="only --check")
    a = ap.parse_args()
    root, sources, targets = SETS[a.set]
    known = dict(sources)
    names = a.only or list(known)
    bad = [n for n in names if n not in known]
    if bad:
        print(f"unknown {a.set} kernel(s) {', '.join(bad)}; known: {', '.join(known)}",
              file=sys.stderr)
        return 2
    if not a.no_build:
        llvm = find_llvm_dir(a.llvm_dir)
        for n in names:
            build(root, n, known[n], llvm, targets)
    if a.check is not None:
        return 1 if check(root, names, a.check or ["small", "large"], targets) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
