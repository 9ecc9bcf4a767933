"""Triton fused residual-add + RMS norm (vLLM fused_add_rms_norm), one program per row, fp16 I/O with fp32
math: h = x + residual; residual_out = h (fp16); out = h / sqrt(mean(h^2) + eps) * w (fp16).
n_cols <= BLOCK. Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_fused_add_rmsnorm(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    off = row * n_cols + cols
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + off, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(res_out_ptr + off, h.to(tl.float16), mask=mask)
    ms = tl.sum(h * h, axis=0) / n_cols
    rs = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + off, (h * rs * w).to(tl.float16), mask=mask)


TRITON_BUILD = dict(
    fn=tri_fused_add_rmsnorm,
    signature={"x_ptr": "*fp16", "res_ptr": "*fp16", "w_ptr": "*fp16", "out_ptr": "*fp16",
               "res_out_ptr": "*fp16", "n_cols": "i32", "eps": "fp32", "BLOCK": "constexpr"},
    constexprs={"BLOCK": 4096},
    options={"num_warps": 8, "num_stages": 1},
    output="tri_fused_add_rmsnorm.gfx942.co",
)
