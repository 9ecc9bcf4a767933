import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import corpus_reference  # noqa: E402

reference = corpus_reference("aiter_bf16gemm")   # experiments/kernels/aiter_bf16gemm: the same kernel family
