"""The reference of the corpus's aiter_bwd_dq_convert (experiments/kernels/aiter_bwd_dq_convert/reference.py): the same
kernel family, which takes the sizes, tile, head dim or GQA from the launch's arguments."""
import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "kernels" / "aiter_bwd_dq_convert" / "reference.py"
_spec = importlib.util.spec_from_file_location("aiter_bwd_dq_convert_reference", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
reference = _module.reference
