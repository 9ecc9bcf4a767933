import numpy as np


def reference(args: dict) -> dict:
    x = args["x"]
    return {"y": _sum_mod(x)}


def _interleave(x):
    y = np.zeros(2 * x.size, np.uint16)
    y[::2] = x & 0xFFFF
    return y


def _sum_mod(x):
    m = x.size // 64
    return (x.astype(np.uint64).reshape(64, m).sum(axis=0) & 0xFFFFFFFF).astype(np.uint32)


def _sum_div(x):
    return (x.astype(np.uint64).reshape(-1, 64).sum(axis=1) & 0xFFFFFFFF).astype(np.uint32)
