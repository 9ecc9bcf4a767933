import numpy as np


def reference(args: dict) -> dict:
    u = args["x"].astype(np.float64) * 1.5 + 0.25
    return {"y": 0.5 * u * (1.0 + np.tanh(0.7978845608028654 * (u + 0.044715 * u ** 3)))}
