import numpy as np


def reference(args: dict) -> dict:
    x = args["x"].astype(np.float64).reshape(-1, 256)
    return {"y": np.cumsum(x, axis=1).reshape(-1)}
