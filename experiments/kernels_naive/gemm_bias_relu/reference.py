import numpy as np


def reference(args: dict) -> dict:
    m, n, k = int(args["M"]), int(args["N"]), int(args["K"])
    a = args["A"].astype(np.float64).reshape(m, k)
    b = args["B"].astype(np.float64).reshape(k, n)
    return {"C": np.maximum(a @ b + args["bias"].astype(np.float64), 0.0).reshape(-1)}
