"""Numerics shared by the production references (experiments/production/*/reference.py)."""
import numpy as np

from asmevo.launch.dtypes import decode

__all__ = ["np", "f64", "bf16_round", "corpus_reference"]


def f64(args: dict, name: str, dtype: str, count: int | None = None) -> np.ndarray:
    """A buffer's values as float64 (bf16/fp8 buffers hold raw bits: decoded)."""
    a = args[name] if count is None else args[name][:count]
    if dtype in ("float32", "float16", "float64"):
        return a.astype(np.float64)
    return decode(a, dtype).astype(np.float64)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float64 -> the nearest bf16 value (ties to even), as float64: a kernel's bf16 store
    or cast that the reference must replay because later math depends on it."""
    f = np.asarray(x, np.float64).astype(np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def corpus_reference(folder: str):
    """The ``reference`` of the corpus's ``experiments/kernels/<folder>`` (the AITer objects
    here are siblings of those: the same kernel family, its sizes read from the arguments)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "kernels" / folder / "reference.py"
    spec = importlib.util.spec_from_file_location(f"{folder}_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference
