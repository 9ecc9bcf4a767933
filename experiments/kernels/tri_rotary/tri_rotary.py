"""Triton rotary embedding, neox style (rotate halves), as in vLLM/SGLang rotary_embedding:
x[T, H, D] (fp16), positions[T] (int32), cos/sin caches [MAX_POS, D/2] (fp32); for each token t, head h:
  x1 = x[t, h, :D/2], x2 = x[t, h, D/2:], c = cos[pos[t]], s = sin[pos[t]]
  out[t, h, :D/2] = x1 * c - x2 * s;  out[t, h, D/2:] = x2 * c + x1 * s   (fp16)
One program per token, all heads at once (n_heads <= BLOCK_H). Built by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_rotary(x_ptr, pos_ptr, cos_ptr, sin_ptr, out_ptr, n_heads,
               HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    tok = tl.program_id(0)
    pos = tl.load(pos_ptr + tok)
    h = tl.arange(0, BLOCK_H)[:, None]
    d = tl.arange(0, HALF)[None, :]
    mask = h < n_heads
    c = tl.load(cos_ptr + pos * HALF + d)
    s = tl.load(sin_ptr + pos * HALF + d)
    base = tok * n_heads * HEAD_DIM + h * HEAD_DIM + d
    x1 = tl.load(x_ptr + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base, (x1 * c - x2 * s).to(tl.float16), mask=mask)
    tl.store(out_ptr + base + HALF, (x2 * c + x1 * s).to(tl.float16), mask=mask)


TRITON_BUILD = dict(
    fn=tri_rotary,
    signature={"x_ptr": "*fp16", "pos_ptr": "*i32", "cos_ptr": "*fp32", "sin_ptr": "*fp32",
               "out_ptr": "*fp16", "n_heads": "i32", "HEAD_DIM": "constexpr", "BLOCK_H": "constexpr"},
    constexprs={"HEAD_DIM": 128, "BLOCK_H": 32},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_rotary.gfx942.co",
)
