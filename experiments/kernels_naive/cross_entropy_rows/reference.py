import numpy as np


def reference(args: dict) -> dict:
    cols = int(args["cols"])
    x = args["logits"].astype(np.float64).reshape(-1, cols)
    m = x.max(axis=1)
    lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
    return {"loss": lse - x[np.arange(x.shape[0]), args["target"]]}
