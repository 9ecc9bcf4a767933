"""Triton row softmax, one program per row (n_cols <= BLOCK). Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


TRITON_BUILD = dict(
    fn=tri_softmax,
    signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"},
    constexprs={"BLOCK": 256},
    options={"num_warps": 2, "num_stages": 1},
    output="tri_softmax.gfx942.co",
)
