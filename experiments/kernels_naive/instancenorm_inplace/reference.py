import numpy as np


def reference(args: dict) -> dict:
    hw = int(args["hw"])
    x = args["x"].astype(np.float64).reshape(-1, hw)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return {"y": ((x - mu) / np.sqrt(var + 1e-5)).reshape(-1)}
