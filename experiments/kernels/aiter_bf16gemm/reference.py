import numpy as np


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def unshuffle(bs: np.ndarray, n: int, k: int) -> np.ndarray:
    """Invert aiter's shuffle_weight(B, layout=(16, 16)) for 2-byte elements:
    B.view(N/16, 16, K/32, 4, 8).permute(0, 2, 3, 1, 4) is what the kernel reads."""
    return bs.reshape(n // 16, k // 32, 4, 16, 8).transpose(0, 3, 1, 2, 4).reshape(n, k)


def reference(args: dict) -> dict:
    m, n, k = int(args["Mdim"]), int(args["Ndim"]), int(args["Kdim"])
    a = bf16_to_f64(args["A"]).reshape(m, k)
    b = bf16_to_f64(unshuffle(args["B"], n, k))
    return {"D": (a @ b.T).reshape(-1)}
