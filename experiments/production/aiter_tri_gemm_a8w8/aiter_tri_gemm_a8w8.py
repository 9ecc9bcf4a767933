"""AITer Triton FP8 GEMM: C = (A @ B^T) * a_scale[:, None] * b_scale[None, :], A [M, K] and B [N, K] fp8 e4m3fnuz, bf16 C

Source: AITer (github.com/ROCm/aiter) aiter/ops/triton/utils/_triton/pid_preprocessing.py and aiter/ops/triton/_triton_kernels/gemm/basic/gemm_a8w8.py at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879 (MIT, see NOTICE): the
@triton.jit kernel below is copied verbatim but for the blocks it shares with the other AITer GEMM, which
are calls to ../aiter_gemm_common.py's helpers (adapted from upstream: the same code, moved there once; the
compiled object is byte for byte the one the verbatim kernel gave; num_pid_m and num_pid_n, computed
between pid and pid_grid upstream, now come before the pid_mnk call); the kernel's @triton.heuristics / repr decorators are reduced to @triton.jit (TRITON_BUILD evaluates the heuristics, EVEN_K and GRID_MN, for its launch). TRITON_BUILD (asmevo's) gives the launch
AITer's host code makes (aiter/ops/triton/gemm/basic/gemm_a8w8.py gemm_a8w8 with configs/gemm/gfx942-GEMM-A8W8.json 'any': 128x128x128 tiles, GROUP_SIZE_M 4, num_warps 4, num_stages 2, waves_per_eu 2, matrix_instr_nonkdim 16, kpack 2, NUM_KSPLIT 1); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl

from aiter_gemm_common import ab_ptrs, k_iterations, load_ab, pid_mnk, remap_xcd, store_c  # noqa: E402  (on sys.path: build_production)


@triton.jit
def _gemm_a8w8_kernel(
    # Pointers to matrices
    a_ptr,
    b_ptr,
    a_scale_ptr,
    b_scale_ptr,
    bias_ptr,
    c_ptr,
    # Matrix dimensions
    M,
    N,
    K,
    # The stride variables represent how much to increase the ptr by when
    # moving by 1 element in a particular dimension. E.g. `stride_am` is
    # how much to increase `a_ptr` by to get the element one row down
    # (A has M rows).
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_ck,
    stride_cm,
    stride_cn,
    # Meta-parameters
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    NUM_KSPLIT: tl.constexpr,
    SPLITK_BLOCK_SIZE: tl.constexpr,
    EVEN_K: tl.constexpr,
    GRID_MN: tl.constexpr,
    cache_modifier: tl.constexpr,
):
    """
    Note: this is Triton jited function and not meant to be called directly. Call gemm_a8w8 instead.

    Computes the 8 bit matmul C = A x B, applies a conversion scale and optionally adds a bias to
    the result.
    The conversion scale is received in the form of two 1D tensors that are multiplied and form a
    2D one before being applied.

    Key parameters:
    - A: Matrix A with shape (M, K).
    - B: Matrix B with shape (K, N).
    - C: Matrix C with shape (M, N) if NUM_KSPLIT==1, (NUM_KSPLIT, M, N) otherwise.
    - A_scale: First scale tensor with shape (M, 1).
    - B_scale: Second scale tensor with shape (1, N).
    - Bias: Bias tensor with shape (1, N).
    """

    tl.assume(stride_am > 0)
    tl.assume(stride_ak > 0)
    tl.assume(stride_bk > 0)
    tl.assume(stride_bn > 0)
    tl.assume(stride_cm > 0)
    tl.assume(stride_cn > 0)

    # -----------------------------------------------------------
    # Map program ids `pid` to the block of C it should compute.
    # This is done in a grouped ordering to promote L2 data reuse.
    pid_unified = tl.program_id(axis=0)
    # remap so that XCDs get continous chunks of pids (of CHUNK_SIZE).
    pid_unified = remap_xcd(pid_unified, GRID_MN * NUM_KSPLIT, NUM_XCDS=8)

    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m, pid_n, pid_k = pid_mnk(pid_unified, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_KSPLIT)

    split_k_start = pid_k * SPLITK_BLOCK_SIZE
    if split_k_start < K:

        # Create pointers for first block of A and B input matrices
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        offs_k_split = split_k_start + offs_k
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        a_ptrs, b_ptrs = ab_ptrs(a_ptr, b_ptr, offs_am, offs_bn, offs_k_split,
                                 stride_am, stride_ak, stride_bk, stride_bn)

        # Create pointers for the scale tensors and load them
        a_scale = tl.load(a_scale_ptr + offs_am)
        b_scale = tl.load(b_scale_ptr + offs_bn)

        acc_dtype = tl.float32 if c_ptr.type.element_ty != tl.int8 else tl.int32
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)

        k_span, num_k_iter = k_iterations(split_k_start, K, SPLITK_BLOCK_SIZE, BLOCK_SIZE_K)

        for k in range(num_k_iter):
            a, b = load_ab(a_ptrs, b_ptrs, offs_k, k_span - k * BLOCK_SIZE_K, EVEN_K, cache_modifier)

            accumulator += tl.dot(a, b)

            # Advance the ptrs to the next K block.
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk

        # Apply scale
        accumulator *= a_scale[:, None] * b_scale[None, :]

        # Add bias (only when not splitting K; bias is added after reduce)
        if HAS_BIAS:
            bias = tl.load(bias_ptr + offs_bn)
            accumulator = accumulator.to(bias_ptr.type.element_ty) + bias[None, :]

        c = accumulator.to(c_ptr.type.element_ty)

        # Write back the block of the output matrix C with masks.
        store_c(c_ptr, c, pid_m, pid_n, pid_k, M, N,
                stride_cm, stride_cn, stride_ck, BLOCK_SIZE_M, BLOCK_SIZE_N, False)



# A launch of gemm_a8w8(x [M = 50, K = 1024], w [N = 512, K]): w is passed transposed (w.T:
# stride_bk 1, stride_bn K), x.stride(1) and y.stride(1) are 1, stride_ck 0 (NUM_KSPLIT 1), no
# bias (None). Heuristics: EVEN_K (1024 % 128 == 0), GRID_MN = cdiv(50, 128) * cdiv(512, 128) = 4;
# compute_splitk_params: SPLITK_BLOCK_SIZE = K = 1024. M = 50 is not divisible by 16 (no
# specialization); N = 512 and K are.
TRITON_BUILD = dict(
    fn=_gemm_a8w8_kernel,
    signature={"a_ptr": "*fp8e4b8", "b_ptr": "*fp8e4b8", "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32",
               "bias_ptr": "constexpr", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32",
               "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
               "stride_ck": "i32", "stride_cm": "i32", "stride_cn": "i32",
               "HAS_BIAS": "constexpr", "BLOCK_SIZE_M": "constexpr", "BLOCK_SIZE_N": "constexpr",
               "BLOCK_SIZE_K": "constexpr", "GROUP_SIZE_M": "constexpr", "NUM_KSPLIT": "constexpr",
               "SPLITK_BLOCK_SIZE": "constexpr", "EVEN_K": "constexpr", "GRID_MN": "constexpr",
               "cache_modifier": "constexpr"},
    constexprs={"bias_ptr": None, "HAS_BIAS": False, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128,
                "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "NUM_KSPLIT": 1, "SPLITK_BLOCK_SIZE": 1024,
                "EVEN_K": True, "GRID_MN": 4, "cache_modifier": None},
    launch={"M": 50, "N": 512, "K": 1024, "stride_am": 1024, "stride_ak": 1, "stride_bk": 1,
            "stride_bn": 1024, "stride_ck": 0, "stride_cm": 512, "stride_cn": 1},
    options={"num_warps": 4, "num_stages": 2, "waves_per_eu": 2, "matrix_instr_nonkdim": 16, "kpack": 2},
    output="aiter_tri_gemm_a8w8.gfx942.co",
)
