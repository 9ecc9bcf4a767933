import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("aiter_ref", Path(__file__).parents[1] / "aiter_ref.py")
aiter_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aiter_ref)


def reference(args: dict) -> dict:
    dm, inter, e = int(args["dim"]), int(args["hdim"]), int(args["eprt"])
    t = int(args["batch"])
    x = aiter_ref.fp8_e4m3fnuz(args["X"][: t * dm]).reshape(t, dm) * args["XQ"].astype(np.float64)[:, None]
    w = args["G"].reshape(e, 2 * inter * dm)
    gq = args["GQ"].astype(np.float64).reshape(e, 2 * inter)
    ids, experts = args["STP"], args["SEP"]
    out = np.zeros((t, inter))
    for blk, ex in enumerate(experts):
        wex = aiter_ref.fp8_e4m3fnuz(aiter_ref.unshuffle(w[ex], 2 * inter, dm)) * gq[ex][:, None]
        toks = ids[16 * blk:16 * blk + 16] & 0xFFFFFF
        gu = x[toks] @ wex.T
        g, u = gu[:, :inter], gu[:, inter:]
        out[toks] = g / (1.0 + np.exp(-g)) * u
    return {"O": out.reshape(-1)}
