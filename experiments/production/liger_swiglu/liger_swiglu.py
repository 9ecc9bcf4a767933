"""Liger SwiGLU forward c = silu(a) * b, bf16, one program per row

Source: Liger-Kernel (github.com/linkedin/Liger-Kernel) src/liger_kernel/ops/swiglu.py at commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
(BSD-2-Clause, see NOTICE): the @triton.jit function(s) below are copied verbatim; only the
imports are reduced to what they use. TRITON_BUILD (asmevo's) gives the launch the Liger host
code makes (swiglu_forward: calculate_settings(14336) -> BLOCK_SIZE 16384, num_warps 16); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def _swiglu_forward_kernel(
    a_ptr, b_ptr, c_ptr, stride, gate_multiplier, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    # sigmoid requires type float32
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32) * gate_multiplier.to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)



# Llama-3 8B intermediate size 14336 (n_cols is a constexpr), bf16.
TRITON_BUILD = dict(
    fn=_swiglu_forward_kernel,
    signature={"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "stride": "i32",
               "gate_multiplier": "fp32", "n_cols": "constexpr", "BLOCK_SIZE": "constexpr"},
    constexprs={"n_cols": 14336, "BLOCK_SIZE": 16384},
    launch={"stride": 14336},
    options={"num_warps": 16},
    output="liger_swiglu.gfx942.co",
)
