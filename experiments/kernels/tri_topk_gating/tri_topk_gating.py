"""Triton MoE top-k gating (vLLM/SGLang fused_topk, softmax scoring, no renormalization):
logits[T, E] (fp32, E <= BLOCK_E) -> p = softmax(logits[t]); weights[t, :TOPK] = the TOPK largest p
(descending), ids[t, :TOPK] = their expert indices (int32, lowest index on ties). BLOCK_T tokens per
program (grid cdiv(T, BLOCK_T)). Built for gfx942 by experiments/build_corpus.py."""
import triton
import triton.language as tl


@triton.jit
def tri_topk_gating(logits_ptr, w_ptr, ids_ptr, n_tokens, n_experts,
                    BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, TOPK: tl.constexpr):
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    e = tl.arange(0, BLOCK_E)
    tmask = t < n_tokens
    mask = tmask[:, None] & (e[None, :] < n_experts)
    x = tl.load(logits_ptr + t[:, None] * n_experts + e[None, :], mask=mask, other=0.0)
    x = tl.where(e[None, :] < n_experts, x, float("-inf"))  # padded experts; padded tokens stay finite
    m = tl.max(x, axis=1)
    p = tl.exp(x - m[:, None])
    p = tl.where(e[None, :] < n_experts, p, 0.0)
    p = p / tl.sum(p, axis=1)[:, None]
    for k in tl.static_range(TOPK):
        best = tl.max(p, axis=1)
        idx = tl.argmax(p, axis=1)
        tl.store(w_ptr + t * TOPK + k, best, mask=tmask)
        tl.store(ids_ptr + t * TOPK + k, idx.to(tl.int32), mask=tmask)
        p = tl.where(e[None, :] == idx[:, None], -1.0, p)


TRITON_BUILD = dict(
    fn=tri_topk_gating,
    signature={"logits_ptr": "*fp32", "w_ptr": "*fp32", "ids_ptr": "*i32", "n_tokens": "i32",
               "n_experts": "i32", "BLOCK_T": "constexpr", "BLOCK_E": "constexpr", "TOPK": "constexpr"},
    constexprs={"BLOCK_T": 16, "BLOCK_E": 64, "TOPK": 2},
    options={"num_warps": 4, "num_stages": 1},
    output="tri_topk_gating.gfx942.co",
)
