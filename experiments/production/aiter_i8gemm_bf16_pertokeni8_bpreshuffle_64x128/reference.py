import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("aiter_ref", Path(__file__).parents[2] / "kernels" / "aiter_ref.py")
aiter_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aiter_ref)


def reference(args: dict) -> dict:
    m, n, k = int(args["M"]), int(args["Ndim"]), int(args["K"])
    a = args["A"].astype(np.float64).reshape(m, k)
    b = aiter_ref.unshuffle(args["B"], n, k).astype(np.float64)
    acc = a @ b.T                                     # exact (int32 in the kernel)
    c = acc * args["SA"].astype(np.float64)[:, None] * args["SB"].astype(np.float64)[None, :]
    return {"C": (c + args["BIAS"].astype(np.float64)[None, :]).reshape(-1)}
