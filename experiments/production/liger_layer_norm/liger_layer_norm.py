"""Liger LayerNorm forward, bf16, one program per row

Source: Liger-Kernel (github.com/linkedin/Liger-Kernel) src/liger_kernel/ops/layer_norm.py at commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
(BSD-2-Clause, see NOTICE): the @triton.jit function(s) below are copied verbatim; only the
imports are reduced to what they use. TRITON_BUILD (asmevo's) gives the launch the Liger host
code makes (layer_norm_forward: calculate_settings(4096) -> BLOCK_SIZE 4096, num_warps 8); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt

@triton.jit
def _layer_norm_forward_kernel(
    Y_ptr,  # pointer to output, shape (n_rows, n_cols)
    Y_row_stride,  # stride of each row in output
    X_ptr,  # pointer to input, shape (n_rows, n_cols)
    X_row_stride,  # stride of each row in input
    W_ptr,  # pointer to weights, shape (n_cols,)
    W_row_stride,  # stride of each row in weights
    B_ptr,  # pointer to bias, shape (n_cols,)
    B_row_stride,  # stride of each row in bias
    Mean_ptr,  # pointer to mean, shape (n_rows,)
    Mean_row_stride,  # stride of each row in mean
    RSTD_ptr,  # pointer to rstd, shape (n_rows,)
    RSTD_row_stride,  # stride of each row in rstd
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    """
    References:
    https://arxiv.org/abs/1607.06450
    https://github.com/karpathy/llm.c/blob/master/doc/layernorm/layernorm.md
    """
    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    # Pre-load weights and bias in fp32 to avoid repeated conversions
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0.0)
    B_row = tl.load(B_ptr + col_offsets, mask=mask, other=0.0)
    W_f32 = W_row.to(tl.float32)
    B_f32 = B_row.to(tl.float32)

    # Calculate pointers for this row
    row_X_ptr = X_ptr + row_idx * X_row_stride
    row_Y_ptr = Y_ptr + row_idx * Y_row_stride
    row_Mean_ptr = Mean_ptr + row_idx * Mean_row_stride
    row_RSTD_ptr = RSTD_ptr + row_idx * RSTD_row_stride

    # Load input data and convert to fp32 for numerical stability
    X_row = tl.load(row_X_ptr + col_offsets, mask=mask, other=0.0)
    X_f32 = X_row.to(tl.float32)

    # Compute statistics in fp32 for numerical stability
    mean = tl.sum(X_f32, axis=0) / n_cols
    X_centered = X_f32 - mean
    # Apply mask to variance calculation to exclude contributions from masked elements
    X_centered_masked = tl.where(mask, X_centered, 0.0)
    var = tl.sum(X_centered_masked * X_centered_masked, axis=0) / n_cols
    rstd = rsqrt(var + eps.to(tl.float32))

    # Store statistics (convert back to original dtype only once)
    tl.store(row_Mean_ptr, mean.to(X_row.dtype))
    tl.store(row_RSTD_ptr, rstd.to(X_row.dtype))

    # Fused normalization and affine transformation
    # Y = (X - mean) * rstd * W + B = X_centered * rstd * W + B
    Y_f32 = X_centered * rstd * W_f32 + B_f32

    # Store output (single conversion back to original dtype)
    tl.store(row_Y_ptr + col_offsets, Y_f32.to(X_row.dtype), mask=mask)



# hidden size 4096, bf16 X/W/B/Y, Mean and RSTD in X's dtype (layer_norm_forward).
TRITON_BUILD = dict(
    fn=_layer_norm_forward_kernel,
    signature={"Y_ptr": "*bf16", "Y_row_stride": "i32", "X_ptr": "*bf16", "X_row_stride": "i32",
               "W_ptr": "*bf16", "W_row_stride": "i32", "B_ptr": "*bf16", "B_row_stride": "i32",
               "Mean_ptr": "*bf16", "Mean_row_stride": "i32", "RSTD_ptr": "*bf16",
               "RSTD_row_stride": "i32", "n_cols": "i32", "eps": "fp32", "BLOCK_SIZE": "constexpr"},
    constexprs={"BLOCK_SIZE": 4096},
    launch={"Y_row_stride": 4096, "X_row_stride": 4096, "W_row_stride": 1, "B_row_stride": 1,
            "Mean_row_stride": 1, "RSTD_row_stride": 1, "n_cols": 4096},
    options={"num_warps": 8},
    output="liger_layer_norm.gfx942.co",
)
