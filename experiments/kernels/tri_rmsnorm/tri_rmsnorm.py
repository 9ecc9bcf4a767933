"""Triton RMS norm, one program per row (n_cols <= BLOCK). Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_rmsnorm(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / n_cols
    rs = 1.0 / tl.sqrt(ms + eps)
    tl.store(y_ptr + row * n_cols + cols, x * rs * w, mask=mask)


TRITON_BUILD = dict(
    fn=tri_rmsnorm,
    signature={"x_ptr": "*fp32", "w_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "eps": "fp32",
               "BLOCK": "constexpr"},
    constexprs={"BLOCK": 256},
    options={"num_warps": 2, "num_stages": 1},
    output="tri_rmsnorm.gfx942.co",
)
