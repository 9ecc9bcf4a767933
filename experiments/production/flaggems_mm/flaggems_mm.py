"""FlagGems general matmul C = A @ B (bf16 in and out, fp32 accumulation), AMD tuned config.

Source: FlagGems (github.com/FlagOpen/FlagGems) src/flag_gems/ops/mm.py at commit 532ff438c70343d7aec9becdabb76a71225a0553 (Apache-2.0, see NOTICE): the
@triton.jit functions below are copied verbatim; the kernel's @libentry/@libtuner decorators (the
autotuner) are left out, and src/flag_gems/utils/triton_lang_extension.py's program_id is copied
into a module named ``tle`` as the kernel calls it. TRITON_BUILD (asmevo's) gives a launch of
mm(a [M, K], b [K, N]) with GROUP_M 8 (the host's) and one of the configs FlagGems ships for AMD
(src/flag_gems/runtime/backend/_amd/tune_configs.yaml, mm: BLOCK_M 64, BLOCK_N 128, BLOCK_K 64,
num_stages 3, num_warps 4); experiments/build_production.py compiles it for gfx942.
"""
import types

import triton
import triton.language as tl


@triton.jit
def program_id(
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)



tle = types.ModuleType("tle")
tle.program_id = program_id


@triton.jit
def prev_multiple_of(a, b):
    # the largest x<a that x%b ==0
    return tl.cdiv(a, b) * b - b


@triton.jit
def mm_kernel_general(
    A,
    B,
    C,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # matrix multiplication
    pid = tle.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # re-order program ID for better L2 performance
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    # do matrix multiplication
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    prev_multiple = prev_multiple_of(K, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start_k in range(0, prev_multiple, BLOCK_K):
        rk = start_k + tl.arange(0, BLOCK_K)
        a = tl.load(A + (ram[:, None] * stride_am + rk[None, :] * stride_ak))
        b = tl.load(B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn))
        if a.dtype != b.dtype:
            a = a.to(C.dtype.element_ty)
            b = b.to(C.dtype.element_ty)
        acc += tl.dot(a, b, out_dtype=tl.float32, allow_tf32=False)

    # loop peeling
    rk = prev_multiple + tl.arange(0, BLOCK_K)
    mask_k = rk < K
    a = tl.load(
        A + (ram[:, None] * stride_am + rk[None, :] * stride_ak),
        mask=mask_k[None, :],
        other=0.0,
    )
    b = tl.load(
        B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn),
        mask=mask_k[:, None],
        other=0.0,
    )
    if a.dtype != b.dtype:
        a = a.to(C.dtype.element_ty)
        b = b.to(C.dtype.element_ty)
    acc += tl.dot(a, b, out_dtype=tl.float32, allow_tf32=False)

    acc = acc.to(C.dtype.element_ty)
    # rematerialize rm and rn to save registers
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    # handles write-back with reduction-splitting
    tl.store(C, acc, mask=mask)



# a [M = 512, K = 1024] @ b [K, N = 768], contiguous: unit inner strides are constants, M, N, K
# and the row strides divisible by 16 (specialized).
TRITON_BUILD = dict(
    fn=mm_kernel_general,
    signature={"A": "*bf16", "B": "*bf16", "C": "*bf16", "M": "i32", "N": "i32", "K": "i32",
               "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
               "stride_cm": "i32", "stride_cn": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
               "BLOCK_K": "constexpr", "GROUP_M": "constexpr"},
    constexprs={"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
    launch={"M": 512, "N": 768, "K": 1024, "stride_am": 1024, "stride_ak": 1, "stride_bk": 768,
            "stride_bn": 1, "stride_cm": 768, "stride_cn": 1},
    options={"num_warps": 4, "num_stages": 3},
    output="flaggems_mm.gfx942.co",
)
