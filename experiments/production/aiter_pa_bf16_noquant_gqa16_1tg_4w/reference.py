import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("aiter_ref", Path(__file__).parents[2] / "kernels" / "aiter_ref.py")
aiter_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aiter_ref)


def reference(args: dict) -> dict:
    """Decode attention over each sequence's paged KV cache (vLLM layout, V shuffled)."""
    gqa, d, bs = int(args["GQA"]), 128, 16
    hkv = int(args["batch"])
    mb = int(args["mblk"])
    s = args["CL"].size
    nb = args["K"].size // (hkv * d * bs)
    q = aiter_ref.bf16_to_f64(args["Q"]).reshape(s, hkv * gqa, d)
    k = aiter_ref.bf16_to_f64(args["K"]).reshape(nb, hkv, d // 8, bs, 8)
    k = k.transpose(0, 3, 1, 2, 4).reshape(nb, bs, hkv, d)            # [blk, t, kvh, d]
    v = aiter_ref.bf16_to_f64(args["V"]).reshape(nb, hkv, bs // 8, d, 8)
    v = v.transpose(0, 2, 4, 1, 3).reshape(nb, bs, hkv, d)            # [blk, t, kvh, d]
    scale = 1.0 / np.sqrt(d)
    bt = args["BT"].reshape(s, mb)
    out = np.zeros((s, hkv * gqa, d))
    for i in range(s):
        n = int(args["CL"][i])
        blocks = bt[i, : (n + bs - 1) // bs]
        keys = k[blocks].reshape(-1, hkv, d)[:n]
        vals = v[blocks].reshape(-1, hkv, d)[:n]
        for h in range(hkv * gqa):
            sc = scale * keys[:, h // gqa] @ q[i, h]
            p = np.exp(sc - sc.max())
            out[i, h] = (p / p.sum()) @ vals[:, h // gqa]
    return {"O": out.reshape(-1)}
