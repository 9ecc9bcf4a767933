"""Triton decode attention (one query token per sequence, as in vLLM/SGLang decode kernels, unsplit):
q[B, H, D], k/v cache [B, L, H, D] (fp16), out[B, H, D] (fp32);
out[b, h] = softmax(sm_scale * k[b, :, h] @ q[b, h]) @ v[b, :, h].
One program per (b, h) (grid B * H), online softmax over BLOCK_L keys at a time, fp32 math.
Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_decode_attention(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, n_heads, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_L: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // n_heads
    h = bh % n_heads
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + bh * HEAD_DIM + d).to(tl.float32)
    m_i = tl.zeros([], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([], dtype=tl.float32)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_L):
        l = start + tl.arange(0, BLOCK_L)
        lm = l < seq_len
        kv = ((b * seq_len + l) * n_heads + h) * HEAD_DIM
        k = tl.load(k_ptr + kv[:, None] + d[None, :], mask=lm[:, None], other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * sm_scale
        s = tl.where(lm, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(v_ptr + kv[:, None] + d[None, :], mask=lm[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    tl.store(o_ptr + bh * HEAD_DIM + d, acc / l_i)


TRITON_BUILD = dict(
    fn=tri_decode_attention,
    signature={"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "seq_len": "i32",
               "n_heads": "i32", "sm_scale": "fp32", "HEAD_DIM": "constexpr", "BLOCK_L": "constexpr"},
    constexprs={"HEAD_DIM": 64, "BLOCK_L": 32},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_decode_attention.gfx942.co",
)
