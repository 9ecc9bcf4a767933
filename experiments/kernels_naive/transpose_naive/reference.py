import numpy as np


def reference(args: dict) -> dict:
    rows, cols = int(args["rows"]), int(args["cols"])
    return {"y": args["x"].reshape(rows, cols).T.reshape(-1).astype(np.float64)}
