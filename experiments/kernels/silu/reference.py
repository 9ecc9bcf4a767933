import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    x = args["x"][:n].astype(np.float64)
    y = np.zeros(args["y"].shape[0], dtype=np.float64)
    y[:n] = x / (1.0 + np.exp(-x))
    return {"y": y}
