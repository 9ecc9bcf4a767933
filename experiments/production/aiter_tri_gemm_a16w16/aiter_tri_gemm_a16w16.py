"""AITer Triton bf16 GEMM: C = A @ B^T, A [M, K] and B [N, K] bf16, bf16 C

Source: AITer (github.com/ROCm/aiter) aiter/ops/triton/utils/_triton/pid_preprocessing.py and aiter/ops/triton/_triton_kernels/gemm/basic/gemm_a16w16.py at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879 (MIT, see NOTICE): the
@triton.jit functions below are copied verbatim (remap_xcd and pid_grid live in ../aiter_pid_preprocessing.py); the kernel's @triton.heuristics / repr decorators are reduced to @triton.jit with its do_not_specialize=["M", "N"] (TRITON_BUILD evaluates the heuristics, EVEN_K and EVEN_MN, for its launch). TRITON_BUILD (asmevo's) gives the launch
AITer's host code makes (aiter/ops/triton/gemm/basic/gemm_a16w16.py gemm_a16w16 with configs/gemm/gfx942-GEMM-A16W16.json 'M_LEQ_64': 64x128x128 tiles, GROUP_SIZE_M 1, num_warps 4, num_stages 2, waves_per_eu 2, matrix_instr_nonkdim 16, kpack 1, cache_modifier .cg, NUM_KSPLIT 1); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl

from aiter_pid_preprocessing import pid_grid, remap_xcd  # noqa: E402  (on sys.path: build_production)


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
    pid_k = pid_unified % NUM_KSPLIT
    pid = pid_unified // NUM_KSPLIT

    if NUM_KSPLIT == 1:
        pid_m, pid_n = pid_grid(pid, num_pid_m, num_pid_n, GROUP_SIZE_M=GROUP_SIZE_M)
    else:
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n

    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    tl.assume(pid_k >= 0)

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

        a_ptrs = a_ptr + (
            offs_am[:, None] * stride_am + offs_k_split[None, :] * stride_ak
        )
        b_ptrs = b_ptr + (
            offs_k_split[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        )

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

        split_k_end = tl.minimum(split_k_start + SPLITK_BLOCK_SIZE, K)
        k_span = split_k_end - split_k_start
        num_k_iter = tl.cdiv(k_span, BLOCK_SIZE_K)

        for k in range(num_k_iter):
            # Load the next block of A and B, generate a mask by checking the K dimension.
            # If it is out of bounds, set it to 0.
            if EVEN_K:
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs, cache_modifier=cache_modifier)
            else:
                a = tl.load(
                    a_ptrs, mask=offs_k[None, :] < k_span - k * BLOCK_SIZE_K, other=0.0
                )
                b = tl.load(
                    b_ptrs,
                    mask=offs_k[:, None] < k_span - k * BLOCK_SIZE_K,
                    other=0.0,
                    cache_modifier=cache_modifier,
                )
            accumulator = tl.dot(a, b, acc=accumulator)
            # Advance the ptrs to the next K block.
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk

        if use_activation and NUM_KSPLIT == 1:
            accumulator = activation(accumulator)

        # Write back the block of the output matrix C with masks.
        c = accumulator.to(c_ptr.type.element_ty)
        offs_cm = pid_m.to(tl.int64) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n.to(tl.int64) * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = (
            c_ptr
            + stride_cm * offs_cm[:, None]
            + stride_cn * offs_cn[None, :]
            + pid_k * stride_ck
        )
        if EVEN_MN:
            tl.store(c_ptrs, c)
        else:
            c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
            tl.store(c_ptrs, c, mask=c_mask)



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
