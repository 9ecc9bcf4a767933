"""Reference of the MFMA co-execution pair (mfma_indep, mfma_dep): each lane's wave computes
64 v_mfma_f32_32x32x8_f16 of A = B^T (lane l holds row l % 32, k 4 (l // 32) .. + 3, of
[half(x), 1, 0.5, 0.25]) into one accumulator, and a chain of 4 FMAs per step on w = x."""
import numpy as np


def mfma_chain(x: np.ndarray, dependent: bool) -> np.ndarray:
    x = x.astype(np.float32)
    a = np.stack([x.astype(np.float16).astype(np.float64), np.ones_like(x, np.float64),
                  np.full(x.shape, 0.5), np.full(x.shape, 0.25)], axis=-1).reshape(-1, 64, 4)
    lane = np.arange(64)
    h, col = lane // 32, lane % 32
    # the 32x8 A block and the 8x32 B block of each wave: A[m, 4h + j] = a[m + 32h, j]
    blk = np.concatenate([a[:, :32], a[:, 32:]], axis=2)          # (waves, 32, 8)
    prod = blk @ blk.transpose(0, 2, 1)                            # P[m, n] per wave
    row0, row15 = 4 * h, 27 + 4 * h                                # acc[0], acc[15] rows
    p0 = prod[:, row0, col]                                        # (waves, 64)
    p15 = prod[:, row15, col]
    w = x.astype(np.float64).reshape(-1, 64)
    for k in range(64):
        w = w * 0.999 + (p0 * (k + 1) if dependent else 0.5)
        w = w * 0.999 + 0.25
        w = w * 0.999 + 0.125
        w = w * 0.999 + 0.0625
    return (64 * p0 + 64 * p15 + w).reshape(-1)
