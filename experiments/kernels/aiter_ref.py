"""Numerics shared by the aiter_* references: FP8 E4M3FNUZ values, bf16 bits, and the
inverse of aiter's shuffle_weight(w, layout=(16, 16)) (aiter/ops/shuffle.py)."""
import numpy as np


def fp8_e4m3fnuz(codes: np.ndarray) -> np.ndarray:
    """FP8 E4M3FNUZ bytes -> float64 (bias 8, no inf, no -0, 0x80 = NaN)."""
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 15, c & 7
    val = np.where(e == 0, m * 2.0 ** -10, (1 + m / 8.0) * 2.0 ** (e - 8.0))
    return np.where(c == 0x80, np.nan, sign * val)


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    """bfloat16 buffers hold raw bits (uint16): the upper half of a float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def unshuffle(ws: np.ndarray, n: int, k: int) -> np.ndarray:
    """The [n, k] matrix whose shuffle_weight(w, layout=(16, 16)) is ``ws``.

    shuffle_weight views w as (n/16, 16, k/32, 32/e, e) with e = 16 // element bytes and
    permutes it to (n/16, k/32, 32/e, 16, e); this is the inverse permutation.
    """
    e = 16 // ws.dtype.itemsize
    return ws.reshape(n // 16, k // 32, 32 // e, 16, e).transpose(0, 3, 1, 2, 4).reshape(n, k)

