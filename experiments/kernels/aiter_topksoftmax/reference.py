import numpy as np


def reference(args: dict) -> dict:
    """Top-k of softmax(A) per token, weights renormalized when renormalize = 1."""
    n, e, k = int(args["batch"]), int(args["expert"]), int(args["topk"])
    a = args["A"].astype(np.float64).reshape(n, e)
    p = np.exp(a - a.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    idx = np.argsort(-a, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, idx, axis=1)
    if int(args["renormalize"]):
        w = w / w.sum(axis=1, keepdims=True)
    return {"T": idx.astype(np.int32).reshape(-1), "W": w.reshape(-1)}
