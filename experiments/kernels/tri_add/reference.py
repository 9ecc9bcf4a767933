import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    out = np.zeros(args["out"].shape[0], dtype=np.float64)
    out[:n] = args["x"][:n].astype(np.float64) + args["y"][:n].astype(np.float64)
    return {"out": out}
