"""AITer Triton bf16 GEMM: C = A @ B^T, A [M, K] and B [N, K] bf16, bf16 C

Source: AITer (github.com/ROCm/aiter) aiter/ops/triton/utils/_triton/pid_preprocessing.py and aiter/ops/triton/_triton_kernels/gemm/basic/gemm_a16w16.py at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879 (MIT, see NOTICE): the
@triton.jit kernel below is copied verbatim but for the blocks it shares with the other AITer GEMM, which
are calls to ../aiter_gemm_common.py's helpers (adapted from upstream: the same code, moved there once; the
compiled object is byte for byte the one the verbatim kernel gave); the kernel's @triton.heuristics / repr decorators are reduced to @triton.jit with its do_not_specialize=["M", "N"] (TRITON_BUILD evaluates the heuristics, EVEN_K and EVEN_MN, for its launch). TRITON_BUILD (asmevo's) gives the launch
AITer's host code makes (aiter/ops/triton/gemm/basic/gemm_a16w16.py gemm_a16w16 with configs/gemm/gfx942-GEMM-A16W16.json 'M_LEQ_64': 64x128x128 tiles, GROUP_SIZE_M 1, num_warps 4, num_stages 2, waves_per_eu 2, matrix_instr_nonkdim 16, kpack 1, cache_modifier .cg, NUM_KSPLIT 1); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl

from aiter_gemm_common import ab_ptrs, k_iterations, load_ab, pid_mnk, remap_xcd, store_c  # noqa: E402  (on sys.path: build_production)


@triton.jit(do_not_specialize=["M", "N"])
def _gemm_a16_w16_kernel(
    a_ptr,
    b_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_ck,
    stride_cm,
    stride_cn,
    # Meta-parameters
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    NUM_KSPLIT: tl.constexpr,
    SPLITK_BLOCK_SIZE: tl.constexpr,
    EVEN_K: tl.constexpr,
    EVEN_MN: tl.constexpr,
    cache_modifier: tl.constexpr,
    activation: tl.constexpr,
    use_activation: tl.constexpr,
    ADD_BIAS: tl.constexpr,
    SKIP_REDUCE: tl.constexpr,
):
    """Kernel for computing the matmul C = A x B.
    A has shape (M, K), B has shape (K, N) and C has shape (M, N)
    """

    tl.assume(stride_am > 0)
    tl.assume(stride_ak > 0)
    tl.assume(stride_bk > 0)
    tl.assume(stride_bn > 0)
    tl.assume(stride_ck > 0)
    tl.assume(stride_cm > 0)
    tl.assume(stride_cn > 0)

    # -----------------------------------------------------------
    # Map program ids `pid` to the block of C it should compute.
    # This is done in a grouped ordering to promote L2 data reuse.
    pid_unified = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_unified = remap_xcd(pid_unified, num_pid_m * num_pid_n * NUM_KSPLIT, NUM_XCDS=8)
    pid_m, pid_n, pid_k = pid_mnk(pid_unified, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_KSPLIT)

    split_k_start = pid_k * SPLITK_BLOCK_SIZE
    if split_k_start < K:
        # Create pointers for first block of A and B input matrices
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        offs_k_split = split_k_start + offs_k
        if EVEN_MN:
            offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        else:
            offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
            offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N

        a_ptrs, b_ptrs = ab_ptrs(a_ptr, b_ptr, offs_am, offs_bn, offs_k_split,
                                 stride_am, stride_ak, stride_bk, stride_bn)

        acc_dtype = tl.float32 if c_ptr.type.element_ty != tl.int8 else tl.int32
        if ADD_BIAS:
            if NUM_KSPLIT == 1 or (SKIP_REDUCE and pid_k == 0):
                accumulator = tl.load(bias_ptr + offs_bn).to(dtype=acc_dtype)
                accumulator = tl.broadcast_to(
                    accumulator[None, :], (BLOCK_SIZE_M, BLOCK_SIZE_N)
                )
            else:
                accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
        else:
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)

        k_span, num_k_iter = k_iterations(split_k_start, K, SPLITK_BLOCK_SIZE, BLOCK_SIZE_K)

        for k in range(num_k_iter):
            a, b = load_ab(a_ptrs, b_ptrs, offs_k, k_span - k * BLOCK_SIZE_K, EVEN_K, cache_modifier)
            accumulator = tl.dot(a, b, acc=accumulator)
            # Advance the ptrs to the next K block.
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk

        if use_activation and NUM_KSPLIT == 1:
            accumulator = activation(accumulator)

        # Write back the block of the output matrix C with masks.
        c = accumulator.to(c_ptr.type.element_ty)
        store_c(c_ptr, c, pid_m.to(tl.int64), pid_n.to(tl.int64), pid_k, M, N,
                stride_cm, stride_cn, stride_ck, BLOCK_SIZE_M, BLOCK_SIZE_N, EVEN_MN)



# A launch of gemm_a16w16(x [M = 50, K = 1024], w [N = 1000, K]) (M <= 64: config M_LEQ_64):
# w passed transposed (stride_bk 1, stride_bn K), unit inner strides, stride_ck 0, no bias, no
# activation. Heuristics: EVEN_K (K % SPLITK_BLOCK_SIZE == 0 and 1024 % 128 == 0), EVEN_MN false
# (50 % 64); SPLITK_BLOCK_SIZE = K = 1024. M and N are not specialized (do_not_specialize).
TRITON_BUILD = dict(
    fn=_gemm_a16_w16_kernel,
    signature={"a_ptr": "*bf16", "b_ptr": "*bf16", "bias_ptr": "constexpr", "c_ptr": "*bf16",
               "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_ak": "i32",
               "stride_bk": "i32", "stride_bn": "i32", "stride_ck": "i32", "stride_cm": "i32",
               "stride_cn": "i32", "BLOCK_SIZE_M": "constexpr", "BLOCK_SIZE_N": "constexpr",
               "BLOCK_SIZE_K": "constexpr", "GROUP_SIZE_M": "constexpr", "NUM_KSPLIT": "constexpr",
               "SPLITK_BLOCK_SIZE": "constexpr", "EVEN_K": "constexpr", "EVEN_MN": "constexpr",
               "cache_modifier": "constexpr", "activation": "constexpr",
               "use_activation": "constexpr", "ADD_BIAS": "constexpr", "SKIP_REDUCE": "constexpr"},
    constexprs={"bias_ptr": None, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                "GROUP_SIZE_M": 1, "NUM_KSPLIT": 1, "SPLITK_BLOCK_SIZE": 1024, "EVEN_K": True,
                "EVEN_MN": False, "cache_modifier": ".cg", "activation": "",
                "use_activation": False, "ADD_BIAS": False, "SKIP_REDUCE": False},
    launch={"K": 1024, "stride_am": 1024, "stride_ak": 1, "stride_bk": 1, "stride_bn": 1024,
            "stride_ck": 0, "stride_cm": 1000, "stride_cn": 1},
    do_not_specialize=["M", "N"],
    options={"num_warps": 4, "num_stages": 2, "waves_per_eu": 2, "matrix_instr_nonkdim": 16, "kpack": 1},
    output="aiter_tri_gemm_a16w16.gfx942.co",
)
