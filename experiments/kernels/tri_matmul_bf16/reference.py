import numpy as np


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    """bfloat16 buffers hold raw bits (uint16): the upper half of a float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def reference(args: dict) -> dict:
    """bf16 inputs are exact in float64; the kernel accumulates in fp32."""
    m, n, k = int(args["M"]), int(args["N"]), int(args["K"])
    a = bf16_to_f64(args["a"][: m * k]).reshape(m, k)
    b = bf16_to_f64(args["b"][: k * n]).reshape(k, n)
    return {"c": (a @ b).reshape(-1)}
