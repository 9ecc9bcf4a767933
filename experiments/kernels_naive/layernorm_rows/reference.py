import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    x = args["x"].astype(np.float64).reshape(-1, cols)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * args["gamma"] + args["beta"]
    return {"y": y.reshape(-1)}
