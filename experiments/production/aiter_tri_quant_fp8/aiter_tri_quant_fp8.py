"""AITer Triton per-token dynamic FP8 quantization: scale = max|x| / 240, qx = fp8_e4m3fnuz(x / scale)

Source: AITer (github.com/ROCm/aiter) aiter/ops/triton/_triton_kernels/quant/quant.py at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879 (MIT, see NOTICE): the
@triton.jit functions below are copied verbatim. TRITON_BUILD (asmevo's) gives the launch
AITer's host code makes (aiter/ops/triton/quant/quant.py dynamic_per_token_quant_fp8_i8: NUM_COL_POW2 next_power_of_2(4096), DTYPE_MAX finfo(float8_e4m3fnuz).max = 240, Triton's default num_warps 4); experiments/build_production.py compiles it for gfx942.
"""
import triton
import triton.language as tl

@triton.jit
def _dynamic_per_token_quant_fp8_i8_kernel(
    qx_ptr,
    scale_out_ptr,
    x_in_ptr,
    cols: int,
    x_in_stride_r: int,
    NUM_COL_POW2: tl.constexpr,
    DTYPE_MAX: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    tl.assume(pid > 0)
    tl.assume(x_in_stride_r > 0)

    offs = pid * x_in_stride_r + tl.arange(0, NUM_COL_POW2)
    mask = tl.arange(0, NUM_COL_POW2) < cols
    x = tl.load(x_in_ptr + offs, mask=mask, cache_modifier=".cg")

    m = tl.max(tl.abs(x), axis=-1)
    scale_out = m.to(tl.float32) / DTYPE_MAX
    scale_recip = 1 / scale_out

    qx = x * scale_recip
    qx = qx.to(qx_ptr.dtype.element_ty)

    scale_offs = pid
    tl.store(scale_out_ptr + scale_offs, scale_out)

    tl.store(qx_ptr + offs, qx, mask=mask, cache_modifier=".cs")



# bf16 activations [rows, 4096] -> float8_e4m3fnuz (gfx942's fp8) and one fp32 scale per row.
TRITON_BUILD = dict(
    fn=_dynamic_per_token_quant_fp8_i8_kernel,
    signature={"qx_ptr": "*fp8e4b8", "scale_out_ptr": "*fp32", "x_in_ptr": "*bf16", "cols": "i32",
               "x_in_stride_r": "i32", "NUM_COL_POW2": "constexpr", "DTYPE_MAX": "constexpr"},
    constexprs={"NUM_COL_POW2": 4096, "DTYPE_MAX": 240.0},
    launch={"cols": 4096, "x_in_stride_r": 4096},
    options={"num_warps": 4},
    output="aiter_tri_quant_fp8.gfx942.co",
)
