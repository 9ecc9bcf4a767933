import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    return {"y": np.cumsum(args["x"].astype(np.float64).reshape(-1, cols), axis=1).reshape(-1)}
