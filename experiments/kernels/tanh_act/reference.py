import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    y = np.zeros(args["y"].shape[0], dtype=np.float64)
    y[:n] = np.tanh(args["x"][:n].astype(np.float64))
    return {"y": y}
