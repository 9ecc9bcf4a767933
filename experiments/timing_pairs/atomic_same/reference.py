import numpy as np


def reference(args: dict) -> dict:
    return {"y": _sum_div(args["x"])}


def _sum_div(x):
    return (x.astype(np.uint64).reshape(-1, 64).sum(axis=1) & 0xFFFFFFFF).astype(np.uint32)
