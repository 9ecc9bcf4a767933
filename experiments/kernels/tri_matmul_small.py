"""The small-tile Triton matmul that two corpus kernels build: C[M, N] (fp32) = A[M, K] @ B[K, N], fp32
accumulate via tl.dot (MFMA on gfx942). Row-major contiguous operands; 2-D grid (cdiv(M, BM), cdiv(N, BN)).

tri_matmul_fp16 (fp16 operands, 32 x 32 tiles) and tri_matmul_bf16 (bf16 operands, 64 x 64 tiles) are this
one source, so a fix reaches both. Each folder's module calls :func:`triton_build` with its name, element
type and tile; the name matters: Triton names the code object's kernel symbol after the jitted function.
Imported by experiments/build_corpus.py and experiments/nvidia/build_sm90.py (both put the repository root
on sys.path) through the kernel folders' modules.
"""
import types

import triton
import triton.language as tl


def _tri_matmul(a_ptr, b_ptr, c_ptr, M, N, K,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_build(name: str, elem: str, tile: int) -> dict:
    """The TRITON_BUILD dict of the kernel `name`: operands of Triton type `elem` ("fp16", "bf16"),
    BM = BN = `tile`, BK = 32, 4 warps, 1 stage, output `name`.gfx942.co."""
    fn = types.FunctionType(_tri_matmul.__code__, _tri_matmul.__globals__, name)
    fn.__qualname__ = name
    return dict(
        fn=triton.jit(fn),
        signature={"a_ptr": f"*{elem}", "b_ptr": f"*{elem}", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                   "K": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
        constexprs={"BM": tile, "BN": tile, "BK": 32},
        options={"num_warps": 4, "num_stages": 1},
        output=f"{name}.gfx942.co",
    )
