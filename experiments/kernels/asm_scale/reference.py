import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    alpha = float(np.float32(args["alpha"]))
    y = np.zeros(args["y"].shape[0], dtype=np.float64)
    y[:n] = alpha * args["x"][:n].astype(np.float64)
    return {"y": y}
