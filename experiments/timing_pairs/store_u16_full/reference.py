import numpy as np


def reference(args: dict) -> dict:
    x = args["x"]
    return {"y": (x & 0xFFFF).astype(np.uint16)}
