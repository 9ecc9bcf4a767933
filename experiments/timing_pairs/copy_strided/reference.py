import numpy as np


def reference(args: dict) -> dict:
    x = args["x"].astype(np.float64)
    n = x.size
    i = np.arange(n)
    return {"y": x[(i % 64) * (n // 64) + i // 64]}
