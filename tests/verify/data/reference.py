import numpy as np


def reference(args: dict) -> dict:
    """scale_inplace: x after the launch (past n it keeps its input values)."""
    n = int(args["n"])
    x = args["x"].astype(np.float64)
    x[:n] = 3.0 * x[:n] + 1.0
    return {"x": x}
