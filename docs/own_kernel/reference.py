"""bias_gelu in float64: what the kernel's float32 result is compared with."""
import numpy as np


def reference(args: dict) -> dict:
    rows, cols = int(args["rows"]), int(args["cols"])
    x = args["x"][:rows * cols].astype(np.float64).reshape(rows, cols)
    v = x + args["bias"][:cols].astype(np.float64)
    y = np.zeros(args["y"].shape[0], dtype=np.float64)
    y[:rows * cols] = (0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi)
                                                * (v + 0.044715 * v ** 3)))).ravel()
    return {"y": y}
