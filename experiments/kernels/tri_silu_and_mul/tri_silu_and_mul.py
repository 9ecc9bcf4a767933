"""Triton SiLU-and-mul (vLLM silu_and_mul / SGLang act_and_mul): x[T, 2d] (fp16) -> out[T, d] (fp16),
out = silu(x[:, :d]) * x[:, d:], silu(a) = a / (1 + exp(-a)) in fp32. Grid (T, cdiv(d, BLOCK)).
Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_silu_and_mul(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    tok = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    a = tl.load(x_ptr + tok * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + tok * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + tok * d + cols, y.to(tl.float16), mask=mask)


TRITON_BUILD = dict(
    fn=tri_silu_and_mul,
    signature={"x_ptr": "*fp16", "out_ptr": "*fp16", "d": "i32", "BLOCK": "constexpr"},
    constexprs={"BLOCK": 1024},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_silu_and_mul.gfx942.co",
)
