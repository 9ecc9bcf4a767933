"""The reference of the corpus's aiter_i8gemm (experiments/kernels/aiter_i8gemm/reference.py): the same
kernel family, which takes the sizes, tile, head dim or GQA from the launch's arguments."""
import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "kernels" / "aiter_i8gemm" / "reference.py"
_spec = importlib.util.spec_from_file_location("aiter_i8gemm_reference", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
reference = _module.reference
