import numpy as np


def reference(args: dict) -> dict:
    n = int(args["n"])
    dst = np.zeros(args["dst"].shape[0], dtype=args["src"].dtype)
    dst[:n] = args["src"][:n]
    return {"dst": dst}
