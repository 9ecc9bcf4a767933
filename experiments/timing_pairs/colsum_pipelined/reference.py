import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    x = args["x"].astype(np.float64).reshape(-1, 64, cols)
    return {"y": x.sum(axis=1).reshape(-1)}
