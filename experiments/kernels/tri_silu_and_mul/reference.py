import numpy as np


def reference(args: dict, params: dict) -> dict:
    d = int(args["d"])
    t = int(params["T"])
    x = args["x"][: t * 2 * d].astype(np.float64).reshape(t, 2 * d)
    a, b = x[:, :d], x[:, d:]
    return {"out": (a / (1.0 + np.exp(-a)) * b).reshape(-1)}
