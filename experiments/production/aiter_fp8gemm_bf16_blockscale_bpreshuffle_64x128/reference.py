import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("aiter_ref", Path(__file__).parents[2] / "kernels" / "aiter_ref.py")
aiter_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aiter_ref)


def reference(args: dict) -> dict:
    m, n, k = int(args["M"]), int(args["Ndim"]), int(args["K"])
    kb = k // 128
    a = aiter_ref.fp8_e4m3fnuz(args["A"]).reshape(m, kb, 128)
    b = aiter_ref.fp8_e4m3fnuz(aiter_ref.unshuffle(args["B"], n, k)).reshape(n, kb, 128)
    sa = args["SA"].astype(np.float64).reshape(kb, m)            # transposed x_scale
    sb = args["SB"].astype(np.float64).reshape(n // 128, kb)
    sb_n = np.repeat(sb, 128, axis=0)                              # [n, kb]
    c = np.einsum("mbk,nbk,bm,nb->mn", a, b, sa, sb_n)
    return {"C": (c + args["BIAS"].astype(np.float64)[None, :]).reshape(-1)}
