"""Triton matmul: C[M, N] (fp32) = A[M, K] (bf16) @ B[K, N] (bf16), fp32 accumulate via tl.dot (bf16 MFMA
on gfx942), 64 x 64 tiles. The kernel source is experiments/kernels/tri_matmul_small.py (shared with
tri_matmul_fp16). Built by experiments/build_corpus.py."""
from experiments.kernels.tri_matmul_small import triton_build

TRITON_BUILD = triton_build("tri_matmul_bf16", "bf16", 64)
