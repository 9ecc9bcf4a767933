#!/usr/bin/env python3
"""Rebuild every code object of the asmevo kernel corpus (experiments/kernels/) from source.

    python experiments/build_corpus.py [--only NAME ...] [--llvm-dir DIR]

* HIP C++ (.hip)  -> clang -x hip --cuda-device-only (no ROCm: kernels include kernels/hip_min.h),
                     built for every target in HIP_TARGETS (name.<target>.co).
* Triton (.py)    -> triton.compile for gfx942 (the module's TRITON_BUILD dict says how);
                     triton is imported only when a Triton kernel is built.
* asm (.s)        -> llvm-mc + ld.lld -shared.

NAME is a kernel folder (or the object's base name). Tools are run without a shell, and the
outputs are deterministic: rebuilding gives byte-identical objects.
LLVM: --llvm-dir, else $ASMEVO_LLVM_DIR, else the newest /usr/lib/llvm-N/bin with N >= 19.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import linecache
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
REPO_ROOT = KERNELS_DIR.parent.parent
sys.path.insert(0, str(REPO_ROOT))
from asmevo.process import run_tool  # noqa: E402

HIP_TARGETS = ("gfx942", "gfx90a")
TRITON_TARGET = "gfx942"
ASM_TARGET = "gfx942"

# (folder, source file in that folder). The object is <source stem>.<target>.co beside the source.
# vector_ops.hip holds two kernels (vector_add, vector_scale); vector_scale's spec points at it.
HIP_SOURCES = [
    ("vector_add", "vector_ops.hip"),
    ("gelu_tanh", "gelu_tanh.hip"),
    ("int_hash", "int_hash.hip"),
    ("reduce_sum", "reduce_sum.hip"),
    ("softmax", "softmax.hip"),
    ("layernorm", "layernorm.hip"),
    ("rmsnorm", "rmsnorm.hip"),
    ("matmul_tiled", "matmul_tiled.hip"),
    ("transpose", "transpose.hip"),
    ("relu", "relu.hip"),
    ("silu", "silu.hip"),
    ("tanh_act", "tanh_act.hip"),
    ("row_max", "row_max.hip"),
    ("argmax_rows", "argmax_rows.hip"),
    ("mean_rows", "mean_rows.hip"),
    ("log_softmax", "log_softmax.hip"),
    ("matvec", "matvec.hip"),
    ("conv1d", "conv1d.hip"),
    ("conv2d", "conv2d.hip"),
    ("cumsum_rows", "cumsum_rows.hip"),
    ("cross_entropy", "cross_entropy.hip"),
]
# (folder, module file defining TRITON_BUILD = dict(fn, signature, constexprs, options, output))
TRITON_SOURCES = [
    ("tri_add", "tri_add.py"),
    ("tri_softmax", "tri_softmax.py"),
    ("tri_rmsnorm", "tri_rmsnorm.py"),
    ("tri_layernorm", "tri_layernorm.py"),
    ("tri_matmul_fp16", "tri_matmul_fp16.py"),
    ("tri_fused_add_rmsnorm", "tri_fused_add_rmsnorm.py"),
    ("tri_rotary", "tri_rotary.py"),
    ("tri_silu_and_mul", "tri_silu_and_mul.py"),
    ("tri_matmul_bf16", "tri_matmul_bf16.py"),
    ("tri_decode_attention", "tri_decode_attention.py"),
    ("tri_topk_gating", "tri_topk_gating.py"),
    ("tri_quant_int8", "tri_quant_int8.py"),
    ("tri_dequant", "tri_dequant.py"),
    ("tri_matmul_large", "tri_matmul_large.py"),
]
ASM_SOURCES = [
    ("asm_copy", "asm_copy.s"),
    ("asm_scale", "asm_scale.s"),
]
# Specs that only point at another folder's object (multi-kernel object); --only NAME maps here.
ALIASES = {"vector_scale": "vector_add", "vector_ops": "vector_add"}


def find_llvm_dir(cli: str | None) -> Path:
    if cli:
        return Path(cli)
    env = os.environ.get("ASMEVO_LLVM_DIR")
    if env:
        return Path(env)
    best = None
    for d in glob.glob("/usr/lib/llvm-*/bin"):
        m = re.fullmatch(r"/usr/lib/llvm-(\d+)/bin", d)
        if m and int(m.group(1)) >= 19 and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), Path(d))
    if best is None:
        sys.exit("no LLVM >= 19 found: pass --llvm-dir or set ASMEVO_LLVM_DIR")
    return best[1]


# A compile's time does not follow its source's size: a generous fixed bound, the
# process group killed when it is reached (asmevo.process.run_tool).
COMPILE_TIMEOUT_S = 600


def run(cmd: list[str], cwd: Path | None = None) -> None:
    try:
        res = run_tool([str(c) for c in cmd], cwd=cwd, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"command timed out after {COMPILE_TIMEOUT_S} s: {' '.join(map(str, cmd))}")
    if res.returncode != 0:
        sys.stderr.write(f"command failed ({res.returncode}): {' '.join(map(str, cmd))}\n")
        sys.stderr.write((res.stdout + res.stderr).decode(errors="replace"))
        raise SystemExit(1)


def report(path: Path, extra: str = "") -> None:
    data = path.read_bytes()
    rel = path.relative_to(KERNELS_DIR.parent)
    sha = hashlib.sha256(data).hexdigest()[:16]
    print(f"{str(rel):58s} {len(data):7d} B  sha256:{sha}{('  ' + extra) if extra else ''}", flush=True)


def build_hip(folder: str, src: str, llvm: Path) -> None:
    d = KERNELS_DIR / folder
    stem = Path(src).stem
    for target in HIP_TARGETS:
        out = d / f"{stem}.{target}.co"
        # cwd = kernel folder and relative paths, so no absolute path can leak into the object.
        run([llvm / "clang", "-x", "hip", f"--offload-arch={target}", "-nogpulib", "-nogpuinc",
             "--cuda-device-only", "--no-gpu-bundle-output", "-O3", "-std=c++17",
             "-ffile-prefix-map=" + str(KERNELS_DIR) + "=.",
             f"-cuid=asmevo_{stem}",  # fixed CUID: otherwise a hash of the input path/options
             src, "-o", out.name], cwd=d)
        report(out, "hip")


def build_asm(folder: str, src: str, llvm: Path) -> None:
    d = KERNELS_DIR / folder
    stem = Path(src).stem
    out = d / f"{stem}.{ASM_TARGET}.co"
    with tempfile.TemporaryDirectory() as tmp:
        obj = Path(tmp) / f"{stem}.o"
        run([llvm / "llvm-mc", "-triple=amdgcn-amd-amdhsa", f"-mcpu={ASM_TARGET}", "-filetype=obj",
             src, "-o", obj], cwd=d)
        run([llvm / "ld.lld", "-shared", obj, "-o", out.name], cwd=d)
    report(out, "asm")


_triton = None


def _import_triton(cache_dir: str):
    global _triton
    if _triton is None:
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        os.environ["TRITON_CACHE_DIR"] = cache_dir  # fresh cache: really compile from source
        # No DWARF line info: it would embed the site-packages path of triton/language/*.py.
        os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
        import triton  # noqa: WPS433 (imported lazily on purpose)
        from triton.backends.compiler import GPUTarget
        _triton = (triton, GPUTarget)
    return _triton


def _load_module_repo_relative(path: Path, modname: str) -> types.ModuleType:
    """Execute a kernel module under its repo-relative file name (experiments/kernels/x/x.py).

    Triton writes the source file name and directory into the DWARF line info of the code
    object; a repo-relative name keeps the bytes independent of where the checkout lives.
    """
    rel = str(path.relative_to(REPO_ROOT))
    text = path.read_text()
    linecache.cache[rel] = (len(text), None, text.splitlines(True), rel)  # for inspect.getsource
    mod = types.ModuleType(modname)
    mod.__file__ = rel
    sys.modules[modname] = mod
    exec(compile(text, rel, "exec"), mod.__dict__)
    return mod


def build_triton(folder: str, src: str, cache_dir: str) -> None:
    triton, GPUTarget = _import_triton(cache_dir)
    d = KERNELS_DIR / folder
    mod = _load_module_repo_relative(d / src, f"asmevo_corpus_{folder}")
    b = mod.TRITON_BUILD
    ast = triton.compiler.ASTSource(fn=b["fn"], signature=b["signature"], constexprs=b["constexprs"])
    k = triton.compile(ast, target=GPUTarget("hip", TRITON_TARGET, 64), options=b.get("options", {}))
    out = d / b["output"]
    out.write_bytes(k.asm["hsaco"])
    md = k.metadata
    report(out, f"triton {triton.__version__} num_warps={md.num_warps} block={md.num_warps * 64} "
                f"shared(dynamic_lds)={md.shared}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="kernel folder(s) to rebuild")
    ap.add_argument("--llvm-dir", help="directory holding clang, llvm-mc, ld.lld")
    a = ap.parse_args()

    all_folders = {f for f, _ in HIP_SOURCES + TRITON_SOURCES + ASM_SOURCES}
    wanted = None
    if a.only:
        wanted = set()
        for n in a.only:
            n = ALIASES.get(n, n)
            if n not in all_folders:
                sys.exit(f"unknown kernel {n!r}; known: {', '.join(sorted(all_folders | set(ALIASES)))}")
            wanted.add(n)

    def take(folder: str) -> bool:
        return wanted is None or folder in wanted

    need_llvm = any(take(f) for f, _ in HIP_SOURCES + ASM_SOURCES)
    llvm = find_llvm_dir(a.llvm_dir) if need_llvm else None
    if llvm is not None:
        for tool in ("clang", "llvm-mc", "ld.lld"):
            if not (llvm / tool).exists():
                sys.exit(f"{llvm / tool} not found")

    for folder, src in HIP_SOURCES:
        if take(folder):
            build_hip(folder, src, llvm)
    for folder, src in ASM_SOURCES:
        if take(folder):
            build_asm(folder, src, llvm)
    tri = [(f, s) for f, s in TRITON_SOURCES if take(f)]
    if tri:
        cache = tempfile.mkdtemp(prefix="asmevo_triton_cache_")
        try:
            for folder, src in tri:
                build_triton(folder, src, cache)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
