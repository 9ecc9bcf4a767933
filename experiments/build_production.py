#!/usr/bin/env python3
"""Rebuild the production set (experiments/production/): Triton kernels and AITer objects.

    python experiments/build_production.py [--only NAME ...] [--aiter-git DIR] [--check]

* Triton (.py)  -> triton.compile for gfx942, specialized as a real launch specializes it:
                   each module's TRITON_BUILD names the kernel's argument types, its constexprs
                   (as the project's host code or AMD config sets them) and the integer values
                   of one real launch. From those, like Triton's launcher (JITFunction's
                   specialization and HIPBackend.parse_attr): every pointer is 16-byte aligned
                   and within 2 GiB (``tt.divisibility = 16``, ``tt.pointer_range = 32``: what
                   a torch tensor gives), an integer equal to 1 becomes the constant 1, one
                   divisible by 16 gets ``tt.divisibility = 16``. The spec's [family] keeps
                   to the launches that specialization covers.
* AITer (.co)   -> copied unmodified from an ROCm/aiter checkout or bare git directory
                   (``--aiter-git``, default /work/.mirror/ROCm+aiter/repo) at AITER_COMMIT,
                   checked against the sha256 recorded here.

Triton is imported only when a Triton kernel is built (pinned: TRITON_VERSION). Outputs are
deterministic (line info off, a fresh cache); ``--check`` rebuilds into a temporary folder
and compares with the committed objects instead of writing them.
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROD_DIR = HERE / "production"
sys.path.insert(0, str(HERE))
from build_corpus import _import_triton, _load_module_repo_relative  # noqa: E402

sys.path.insert(0, str(PROD_DIR))   # helpers shared by production kernels (aiter_gemm_common)

TRITON_VERSION = "3.9.0"
TARGET = "gfx942"
AITER_COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
AITER_GIT = Path("/work/.mirror/ROCm+aiter/repo")

TRITON_SOURCES = [
    "liger_rms_norm", "liger_swiglu", "liger_geglu", "liger_rope", "liger_layer_norm",
    "liger_cross_entropy", "aiter_tri_quant_fp8", "aiter_tri_gemm_a8w8", "aiter_tri_gemm_a16w16",
    "aiter_tri_fused_add_rmsnorm", "liger_softmax", "flaggems_mm",
]
# folder -> (path in ROCm/aiter at AITER_COMMIT, sha256 of the object)
AITER_OBJECTS: dict[str, tuple[str, str]] = {
    "aiter_bf16gemm_fp32bf16_tn_64x64_bshuffle_splitk": ("hsa/gfx942/bf16gemm/bf16gemm_fp32bf16_tn_64x64_bshuffle_splitk.co",
        "069dcd5f8082c8fe72275bb0d9b2e18cc00b367583fe64db48fd7e07826df4d2"),
    "aiter_bf16gemm_fp32bf16_tn_128x64_bshuffle_splitk": ("hsa/gfx942/bf16gemm/bf16gemm_fp32bf16_tn_128x64_bshuffle_splitk.co",
        "eb63aea05d96158c336a11a2b23f76b9e484f30f5cc6d1a32e82616d2eb760d6"),
    "aiter_i8gemm_bf16_pertokeni8_bpreshuffle_32x128": ("hsa/gfx942/i8gemm/I8gemm_bf16_perTokenI8_BpreShuffle_32x128.co",
        "a9de008b2e17bf2e006241a1aed23c8eaa7734c63e7aa8a366a836ef75522b90"),
    "aiter_i8gemm_bf16_pertokeni8_bpreshuffle_64x128": ("hsa/gfx942/i8gemm/I8gemm_bf16_perTokenI8_BpreShuffle_64x128.co",
        "b5a5e92fc94d5b6a31b3f4f9b15c16424170db43d45703e83c61c4291851d24e"),
    "aiter_fp8gemm_bf16_blockscale_bpreshuffle_64x128": ("hsa/gfx942/fp8gemm_blockscale/fp8gemm_bf16_blockscale_BpreShuffle_64x128.co",
        "b3b0814cdfc6be1cc838ba7e9065aa763dc2dcd72eb0c26afda31efab2884736"),
    "aiter_bwd_hd128_odo_fp16": ("hsa/gfx942/fmha_v3_bwd/bwd_hd128_odo_fp16.co",
        "b02089761e0d9fb8cbd953cb714eaa65bcfddd8dda769afd32f5fe7169f58ddc"),
    "aiter_bwd_hd128_dq_convert_fp16": ("hsa/gfx942/fmha_v3_bwd/bwd_hd128_dq_convert_fp16.co",
        "e8fc0f249d38daa2b81b8f16f97cfd9ab1fcc6946d31361ea0fb30e590ff1a94"),
    "aiter_pa_bf16_noquant_gqa16_1tg_4w": ("hsa/gfx942/pa/pa_bf16_noquant_gqa16_1tg_4w.co",
        "35ddb30948b3d00a47646a3bbf9b9b454b367d060cb6e39c1d713258e4676684"),
    "aiter_fmoe_stage1_bf16_pertokenfp8_g1u1_16x128_4tg_pf2": ("hsa/gfx942/fmoe_2stages/fmoe_stage1_bf16_pertokenFp8_g1u1_16x128_4tg_pf2.co",
        "2993561ad570d4fd415690f498f8c29cc43ad7dd481180697fbd64141a7545c7"),
}


def attrs_and_signature(build: dict) -> tuple[dict, dict, dict]:
    """Triton's launch-time specialization of ``build`` (see the module docstring)."""
    sig, consts, launch = dict(build["signature"]), dict(build["constexprs"]), build.get("launch", {})
    unspecialized = set(build.get("do_not_specialize", ()))   # the kernel's own @jit list
    attrs: dict[tuple[int, ...], list] = {}
    for i, (name, ty) in enumerate(build["signature"].items()):
        if ty.startswith("*"):
            attrs[(i,)] = [["tt.divisibility", 16], ["tt.pointer_range", 32]]
        elif ty[0] in "iu" and name in unspecialized:
            continue
        elif ty[0] in "iu" and name in launch:
            value = launch[name]
            if value == 1:
                sig[name], consts[name] = "constexpr", 1
            elif value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif ty[0] in "iu":
            raise SystemExit(f"{build['output']}: integer argument {name} has no launch value")
    return sig, consts, attrs


def build_triton(folder: str, out_dir: Path, cache_dir: str) -> Path:
    triton, GPUTarget = _import_triton(cache_dir)
    if triton.__version__ != TRITON_VERSION:
        raise SystemExit(f"triton {triton.__version__} found; the set is built with "
                         f"{TRITON_VERSION} (pip install triton=={TRITON_VERSION})")
    mod = _load_module_repo_relative(PROD_DIR / folder / f"{folder}.py", f"asmevo_prod_{folder}")
    b = mod.TRITON_BUILD
    sig, consts, attrs = attrs_and_signature(b)
    src = triton.compiler.ASTSource(fn=b["fn"], signature=sig, constexprs=consts, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("hip", TARGET, 64), options=b.get("options", {}))
    out = out_dir / b["output"]
    out.write_bytes(k.asm["hsaco"])
    md = k.metadata
    report(out, f"triton {triton.__version__} num_warps={md.num_warps} "
                f"block={md.num_warps * 64} shared(dynamic_lds)={md.shared}")
    return out


def copy_aiter(folder: str, out_dir: Path, git_dir: Path) -> Path:
    path, sha = AITER_OBJECTS[folder]
    if (git_dir / path).is_file():   # a checkout
        data = (git_dir / path).read_bytes()
    else:                            # a bare git directory
        res = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{AITER_COMMIT}:{path}"],
                             capture_output=True, check=False)
        if res.returncode != 0:
            raise SystemExit(f"{git_dir}: cannot read {path} at {AITER_COMMIT}: "
                             f"{res.stderr.decode(errors='replace').strip()}")
        data = res.stdout
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise SystemExit(f"{path}: sha256 {got}, expected {sha} (another aiter commit?)")
    out = out_dir / Path(path).name
    out.write_bytes(data)
    report(out, f"aiter {AITER_COMMIT[:10]} {path}")
    return out


def report(path: Path, extra: str) -> None:
    data = path.read_bytes()
    print(f"{path.name:62s} {len(data):7d} B  sha256:{hashlib.sha256(data).hexdigest()[:16]}  "
          f"{extra}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="production folder(s) to rebuild")
    ap.add_argument("--aiter-git", type=Path, default=AITER_GIT,
                    help="ROCm/aiter checkout or bare git directory")
    ap.add_argument("--check", action="store_true",
                    help="rebuild into a temporary folder and compare with the committed objects")
    a = ap.parse_args()
    known = TRITON_SOURCES + list(AITER_OBJECTS)
    wanted = a.only or known
    for n in wanted:
        if n not in known:
            sys.exit(f"unknown production kernel {n!r}; known: {', '.join(sorted(known))}")
    differ = 0
    cache = tempfile.mkdtemp(prefix="asmevo_triton_cache_")
    try:
        for folder in wanted:
            dest = PROD_DIR / folder
            with tempfile.TemporaryDirectory() as tmp:
                out_dir = Path(tmp) if a.check else dest
                out = (build_triton(folder, out_dir, cache) if folder in TRITON_SOURCES
                       else copy_aiter(folder, out_dir, a.aiter_git))
                if a.check:
                    same = (dest / out.name).is_file() and (dest / out.name).read_bytes() == out.read_bytes()
                    differ += not same
                    print(f"  {'identical' if same else 'DIFFERS'}: {folder}/{out.name}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if a.check:
        print(f"objects={len(wanted)} differ={differ}")
        raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
