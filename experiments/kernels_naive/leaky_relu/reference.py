import numpy as np


def reference(args: dict) -> dict:
    x = args["x"].astype(np.float64)
    return {"y": np.where(x > 0, x, 0.01 * x)}
