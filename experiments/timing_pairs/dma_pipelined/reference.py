import numpy as np


def reference(args: dict) -> dict:
    x = args["x"].astype(np.float64).reshape(-1, 16, 256)
    return {"y": x.sum(axis=1).reshape(-1)}
