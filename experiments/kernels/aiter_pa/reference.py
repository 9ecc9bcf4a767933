import numpy as np


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def reference(args: dict) -> dict:
    """Decode attention over each sequence's paged KV cache (vLLM layout, V shuffled)."""
    gqa, d, bs = int(args["GQA"]), 128, 16
    hkv = int(args["batch"])
    mb = int(args["mblk"])
    s = args["CL"].size
    nb = args["K"].size // (hkv * d * bs)
    q = bf16_to_f64(args["Q"]).reshape(s, hkv * gqa, d)
    k = bf16_to_f64(args["K"]).reshape(nb, hkv, d // 8, bs, 8)
    k = k.transpose(0, 3, 1, 2, 4).reshape(nb, bs, hkv, d)            # [blk, t, kvh, d]
    v = bf16_to_f64(args["V"]).reshape(nb, hkv, bs // 8, d, 8)
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
