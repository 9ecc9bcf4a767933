import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import corpus_reference  # noqa: E402

reference = corpus_reference("aiter_bwd_odo")   # experiments/kernels/aiter_bwd_odo: the same kernel family
