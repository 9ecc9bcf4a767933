"""Triton matmul with big tiles (the benchmark kernel of the corpus): C[M, N] (fp16) = A[M, K] (fp16) @
B[K, N] (fp16), fp32 accumulate via tl.dot (v_mfma_f32_32x32x8_f16), tiles BM x BN x BK = 128 x 128 x 64,
num_warps = 8, in the style of the Triton tutorial matmul: pointer increments, unmasked loads (rows/columns
wrap modulo M/N, so K must be a multiple of BK), masked store. The K loop is unrolled UNROLL = 24 times
(tl.range loop_unroll_factor) to make a large (~30 KB .text) kernel: the unrolled body runs
floor(K / (BK * UNROLL)) times, a plain remainder loop does the rest.
num_stages = 2 is asked for, but Triton 3.9.0 does not software-pipeline this loop (same code with 1).
Why not masked K/M/N loads or a smaller unroll with masks: those variants need > 96 SGPRs (granule 13),
which asmevo's assembly printer cannot express yet (.amdhsa_next_free_sgpr 103 > 102).
Row-major contiguous operands; 2-D grid (cdiv(M, BM), cdiv(N, BN)). Built by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_matmul_large(a_ptr, b_ptr, c_ptr, M, N, K,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, UNROLL: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in tl.range(0, K, BK, loop_unroll_factor=UNROLL):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc.to(tl.float16),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


TRITON_BUILD = dict(
    fn=tri_matmul_large,
    signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
               "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "UNROLL": "constexpr"},
    constexprs={"BM": 128, "BN": 128, "BK": 64, "UNROLL": 24},
    options={"num_warps": 8, "num_stages": 2},
    output="tri_matmul_large.gfx942.co",
)
