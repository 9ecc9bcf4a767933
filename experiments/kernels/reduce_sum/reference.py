import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    rows = args["out"].shape[0]
    x = args["x"][: rows * cols].astype(np.float64).reshape(rows, cols)
    return {"out": x.sum(axis=1)}
