import numpy as np


def reference(args: dict) -> dict:
    n, k = int(args["n"]), int(args["k"])
    x = args["x"][:n].astype(np.float64)
    w = args["w"][:k].astype(np.float64)
    return {"y": np.correlate(x, w, mode="valid")}
