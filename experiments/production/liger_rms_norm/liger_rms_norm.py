"""Liger RMSNorm forward (Llama casting), bf16, one program per row

Source: Liger-Kernel (github.com/linkedin/Liger-Kernel) src/liger_kernel/ops/rms_norm.py at commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
(BSD-2-Clause, see NOTICE): the @triton.jit function(s) below are copied verbatim; only the
imports are reduced to what they use. TRITON_BUILD (asmevo's) gives the launch the Liger host
code makes (rms_norm_forward: calculate_settings(4096) -> BLOCK_SIZE 4096, num_warps 8); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt

_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)


_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)


_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)


@triton.jit
def _rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    W_row_stride,
    RSTD_ptr,
    RSTD_row_stride,
    n_cols,
    eps,
    offset,
    casting_mode: tl.constexpr,  # constexpr so the `if` blocks can be optimized out
    elementwise_affine: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """
    y_i = (x_i / (RMS)) * (offset + wi), RMS = sqrt(sum(x_i^2) / N)

    Reference:
    1. https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html
    2. https://github.com/unslothai/unsloth/blob/fd753fed99ed5f10ef8a9b7139588d9de9ddecfb/unsloth/kernels/rms_layernorm.py#L22
    3. https://arxiv.org/pdf/1910.07467
    """

    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    y_base = Y_ptr + row_idx * Y_row_stride
    x_base = X_ptr + row_idx * X_row_stride
    rstd_base = RSTD_ptr + row_idx * RSTD_row_stride

    X_row = tl.load(x_base + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    if elementwise_affine:
        W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)

    # On Llama, only rstd is computed on fp32
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(tl.float32)

    # Gemma computes everything on fp32, and then casts back the output to the original dtype
    if casting_mode == _CASTING_MODE_GEMMA:
        if elementwise_affine:
            W_row = W_row.to(tl.float32)
        X_row = X_row.to(tl.float32)

    if casting_mode == _CASTING_MODE_NONE:
        eps = eps.to(X_row_dtype)
        offset = offset.to(X_row_dtype)
    else:
        # Scalar kernel params are specialized to fp32 by eager Triton but to
        # fp64 by Inductor when this kernel is launched from inside
        # torch.compile. An fp64 scalar silently promotes mean_square, rsqrt
        # and the weight multiply to float64, roughly halving throughput.
        # Pinning to fp32 is a no-op in eager and keeps both paths identical.
        eps = eps.to(tl.float32)
        offset = offset.to(tl.float32)

    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = rsqrt(mean_square + eps)

    # We can save time by caching rms with minimal memory overhead
    # because rms is much smaller compared to X_row, as rms is for each row.
    # However, on the computation side, it can save 4 operations (*, sum, /, sqrt).
    tl.store(rstd_base, rstd)

    X_row = X_row * rstd

    # On Llama, the multiplication with the weight is done on the original dtype
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(X_row_dtype)

    if elementwise_affine:
        Y_row = X_row * (offset + W_row)
    else:
        Y_row = X_row

    if casting_mode == _CASTING_MODE_GEMMA:
        Y_row = Y_row.to(X_row_dtype)

    tl.store(y_base + col_offsets, Y_row, mask=mask)



# Llama-3 hidden size 4096, bf16 X/W/Y, fp32 RSTD, casting "llama", offset 0.
TRITON_BUILD = dict(
    fn=_rms_norm_forward_kernel,
    signature={"Y_ptr": "*bf16", "Y_row_stride": "i32", "X_ptr": "*bf16", "X_row_stride": "i32",
               "W_ptr": "*bf16", "W_row_stride": "i32", "RSTD_ptr": "*fp32", "RSTD_row_stride": "i32",
               "n_cols": "i32", "eps": "fp32", "offset": "fp32", "casting_mode": "constexpr",
               "elementwise_affine": "constexpr", "BLOCK_SIZE": "constexpr"},
    constexprs={"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": 4096},
    launch={"Y_row_stride": 4096, "X_row_stride": 4096, "W_row_stride": 1, "RSTD_row_stride": 1,
            "n_cols": 4096},
    options={"num_warps": 8},
    output="liger_rms_norm.gfx942.co",
)
