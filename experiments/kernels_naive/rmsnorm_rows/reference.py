import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    x = args["x"].astype(np.float64).reshape(-1, cols)
    y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * args["gamma"]
    return {"y": y.reshape(-1)}
