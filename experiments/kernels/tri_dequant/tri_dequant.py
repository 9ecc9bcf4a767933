"""Triton per-row int8 dequantization: q[R, C] (int8), scale[R] (fp32) -> out[r, c] = fp16(fp32(q) * scale[r]).
Grid (R, cdiv(C, BLOCK)). Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_dequant(q_ptr, scale_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0)
    s = tl.load(scale_ptr + row)
    tl.store(out_ptr + row * n_cols + cols, (q.to(tl.float32) * s).to(tl.float16), mask=mask)


TRITON_BUILD = dict(
    fn=tri_dequant,
    signature={"q_ptr": "*i8", "scale_ptr": "*fp32", "out_ptr": "*fp16", "n_cols": "i32", "BLOCK": "constexpr"},
    constexprs={"BLOCK": 1024},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_dequant.gfx942.co",
)
