"""Triton per-row (per-token) absmax int8 quantization (as vLLM/SGLang per_token_quant_int8):
x[R, C] (fp16) -> scale[r] = max(max|x[r, :]|, 1e-10) / 127 (fp32), q[r, c] = clamp(floor(x / scale + 0.5),
-128, 127) (int8). Every step is one correctly rounded fp32 operation (IEEE division, not x * (1/scale)),
so a float32 numpy model reproduces it bit-exactly. One program per row, n_cols <= BLOCK.
Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_quant_int8(x_ptr, q_ptr, scale_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)
    scale = absmax / 127.0
    q = tl.floor(x / scale + 0.5)
    q = tl.minimum(tl.maximum(q, -128.0), 127.0)
    tl.store(q_ptr + row * n_cols + cols, q.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


TRITON_BUILD = dict(
    fn=tri_quant_int8,
    signature={"x_ptr": "*fp16", "q_ptr": "*i8", "scale_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"},
    constexprs={"BLOCK": 4096},
    options={"num_warps": 8, "num_stages": 1},
    output="tri_quant_int8.gfx942.co",
)
