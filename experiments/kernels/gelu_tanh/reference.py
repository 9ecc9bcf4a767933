import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    x = args["x"][:n].astype(np.float64)
    y = np.zeros(args["y"].shape[0], dtype=np.float64)
    y[:n] = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
    return {"y": y}
