"""Triton matmul: C[M, N] (fp32) = A[M, K] (bf16) @ B[K, N] (bf16), fp32 accumulate via tl.dot (bf16 MFMA
on gfx942). Row-major contiguous operands; 2-D grid (cdiv(M, BM), cdiv(N, BN)). Built by
experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_matmul_bf16(a_ptr, b_ptr, c_ptr, M, N, K,
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


TRITON_BUILD = dict(
    fn=tri_matmul_bf16,
    signature={"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
               "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
    constexprs={"BM": 64, "BN": 64, "BK": 32},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_matmul_bf16.gfx942.co",
)
