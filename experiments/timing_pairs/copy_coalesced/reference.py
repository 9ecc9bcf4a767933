import numpy as np


def reference(args: dict) -> dict:
    return {"y": args["x"].astype(np.float64)}
