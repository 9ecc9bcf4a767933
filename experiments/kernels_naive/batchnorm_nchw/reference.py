import numpy as np


def reference(args: dict) -> dict:
    c, hw = int(args["C"]), int(args["hw"])
    x = args["x"].astype(np.float64).reshape(-1, c, hw)
    m, v = args["mean"][None, :, None], args["var"][None, :, None].astype(np.float64)
    y = (x - m) / np.sqrt(v + 1e-5) * args["gamma"][None, :, None] + args["beta"][None, :, None]
    return {"y": y.reshape(-1)}
