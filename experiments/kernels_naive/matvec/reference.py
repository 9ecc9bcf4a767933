import numpy as np


def reference(args: dict) -> dict:
    m, k = int(args["M"]), int(args["K"])
    return {"y": args["A"].astype(np.float64).reshape(m, k) @ args["x"].astype(np.float64)}
