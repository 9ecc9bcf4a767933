"""Triton matmul: C[M, N] (fp32) = A[M, K] (fp16) @ B[K, N] (fp16), fp32 accumulate via tl.dot (MFMA on gfx942),
32 x 32 tiles. The kernel source is experiments/kernels/tri_matmul_small.py (shared with tri_matmul_bf16).
Built by experiments/build_corpus.py."""
from experiments.kernels.tri_matmul_small import triton_build

TRITON_BUILD = triton_build("tri_matmul_fp16", "fp16", 32)
