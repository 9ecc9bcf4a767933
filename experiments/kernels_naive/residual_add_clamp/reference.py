import numpy as np


def reference(args: dict) -> dict:
    s = (args["x"] + args["r"]).astype(np.float64)
    return {"y": np.clip(s, -1.0, 1.0)}
