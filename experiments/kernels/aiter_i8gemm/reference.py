import numpy as np


def unshuffle(bs: np.ndarray, n: int, k: int) -> np.ndarray:
    """Invert aiter's shuffle_weight(B, layout=(16, 16)) for 1-byte elements:
    B.view(N/16, 16, K/32, 2, 16).permute(0, 2, 3, 1, 4) is what the kernel reads."""
    return bs.reshape(n // 16, k // 32, 2, 16, 16).transpose(0, 3, 1, 2, 4).reshape(n, k)


def reference(args: dict) -> dict:
    m, n, k = int(args["M"]), int(args["Ndim"]), int(args["K"])
    a = args["A"].astype(np.float64).reshape(m, k)
    b = unshuffle(args["B"], n, k).astype(np.float64)
    acc = a @ b.T                                     # exact (int32 in the kernel)
    c = acc * args["SA"].astype(np.float64)[:, None] * args["SB"].astype(np.float64)[None, :]
    return {"C": (c + args["BIAS"].astype(np.float64)[None, :]).reshape(-1)}
