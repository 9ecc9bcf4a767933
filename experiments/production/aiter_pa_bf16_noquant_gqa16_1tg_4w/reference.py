import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import corpus_reference  # noqa: E402

reference = corpus_reference("aiter_pa")   # experiments/kernels/aiter_pa: the same kernel family
