import numpy as np


def reference(args: dict, params: dict) -> dict:
    k = int(args["K"])
    m = int(params["M"])
    a = args["A"][: m * k].astype(np.float64).reshape(m, k)
    return {"y": a @ args["x"][:k].astype(np.float64)}
