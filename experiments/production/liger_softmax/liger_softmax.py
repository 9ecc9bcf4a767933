"""Liger softmax forward (single block): y = softmax(x) over rows, fp32.

Source: Liger-Kernel (github.com/linkedin/Liger-Kernel) src/liger_kernel/ops/softmax.py at commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c (BSD-2-Clause, see
NOTICE): the @triton.jit function below is copied verbatim. TRITON_BUILD (asmevo's) gives the
launch LigerSoftmax makes (_softmax_forward: calculate_settings(2048) -> BLOCK_SIZE 2048,
num_warps 8, the single-block kernel as n_cols <= BLOCK_SIZE); experiments/build_production.py
compiles it for gfx942.
"""
import triton
import triton.language as tl


@triton.jit
def _softmax_single_block_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols

    x = tl.load(X_ptr + row_id * X_row_stride + offs, mask=mask, other=-float("inf"), cache_modifier=".ca")
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    d = tl.sum(e, axis=0)
    y = e / d
    tl.store(Y_ptr + row_id * Y_row_stride + offs, y, mask=mask, cache_modifier=".cs")



TRITON_BUILD = dict(
    fn=_softmax_single_block_forward_kernel,
    signature={"Y_ptr": "*fp32", "Y_row_stride": "i32", "X_ptr": "*fp32", "X_row_stride": "i32",
               "n_cols": "i32", "BLOCK_SIZE": "constexpr"},
    constexprs={"BLOCK_SIZE": 2048},
    launch={"Y_row_stride": 2048, "X_row_stride": 2048, "n_cols": 2048},
    options={"num_warps": 8},
    output="liger_softmax.gfx942.co",
)
