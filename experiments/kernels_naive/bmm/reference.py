import numpy as np


def reference(args: dict) -> dict:
    bt, m, n, k = (int(args[x]) for x in ("batch", "M", "N", "K"))
    a = args["A"].astype(np.float64).reshape(bt, m, k)
    b = args["B"].astype(np.float64).reshape(bt, k, n)
    return {"C": np.matmul(a, b).reshape(-1)}
