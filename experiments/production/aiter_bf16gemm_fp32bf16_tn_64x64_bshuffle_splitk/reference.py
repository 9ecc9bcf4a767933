import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("aiter_ref", Path(__file__).parents[2] / "kernels" / "aiter_ref.py")
aiter_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aiter_ref)


def reference(args: dict) -> dict:
    m, n, k = int(args["Mdim"]), int(args["Ndim"]), int(args["Kdim"])
    a = aiter_ref.bf16_to_f64(args["A"]).reshape(m, k)
    b = aiter_ref.bf16_to_f64(aiter_ref.unshuffle(args["B"], n, k))
    return {"D": (a @ b.T).reshape(-1)}
