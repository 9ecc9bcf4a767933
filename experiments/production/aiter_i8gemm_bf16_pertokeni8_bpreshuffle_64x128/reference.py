import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import corpus_reference  # noqa: E402

reference = corpus_reference("aiter_i8gemm")   # experiments/kernels/aiter_i8gemm: the same kernel family
