import numpy as np


def reference(args: dict) -> dict:
    x = args["x"]
    return {"y": x[::2].astype(np.uint32)}
