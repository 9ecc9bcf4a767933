"""Liger GEGLU forward c = gelu_tanh(a) * b, bf16, one program per row

Source: Liger-Kernel (github.com/linkedin/Liger-Kernel) src/liger_kernel/ops/geglu.py at commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
(BSD-2-Clause, see NOTICE): the @triton.jit function(s) below are copied verbatim; only the
imports are reduced to what they use. TRITON_BUILD (asmevo's) gives the launch the Liger host
code makes (geglu_forward: calculate_settings(11008) -> BLOCK_SIZE 16384, num_warps 16); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl
from triton.language.extra.libdevice import tanh

@triton.jit
def _geglu_tanh_forward_kernel(a, b, c, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a += program_id * stride
    b += program_id * stride
    c += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0)

    # tanh approximation form of GELU is computed with:
    # 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3)))
    sqrt_2_over_pi = 0.7978845608028654  # sqrt(2 / pi)
    a_cubed = a_row * a_row * a_row
    tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed)
    tanh_result = tanh(tanh_arg)
    geglu_a = 0.5 * a_row * (1 + tanh_result)
    c_row = geglu_a.cast(b_row.dtype) * b_row
    tl.store(c + col_offsets, c_row, mask=mask)



# Llama-2 7B style intermediate size 11008 (n_cols is a constexpr), bf16.
TRITON_BUILD = dict(
    fn=_geglu_tanh_forward_kernel,
    signature={"a": "*bf16", "b": "*bf16", "c": "*bf16", "stride": "i32",
               "n_cols": "constexpr", "BLOCK_SIZE": "constexpr"},
    constexprs={"n_cols": 11008, "BLOCK_SIZE": 16384},
    launch={"stride": 11008},
    options={"num_warps": 16},
    output="liger_geglu.gfx942.co",
)
