import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import bf16_round, f64, np  # noqa: E402

HD, NQ, NK = 128, 32, 8   # constexprs of the kernel


def _rotate(x: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    h = HD // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def reference(args: dict, params: dict) -> dict:
    b, sl = int(params["B"]), int(args["sl"])
    c = f64(args, "cos", "bfloat16", sl * HD).reshape(1, sl, 1, HD)[..., : HD // 2]
    s = f64(args, "sin", "bfloat16", sl * HD).reshape(1, sl, 1, HD)[..., : HD // 2]
    q = f64(args, "q", "bfloat16", b * sl * NQ * HD).reshape(b, sl, NQ, HD)
    k = f64(args, "k", "bfloat16", b * sl * NK * HD).reshape(b, sl, NK, HD)
    return {"q": _rotate(q, c, s).reshape(-1), "k": _rotate(k, c, s).reshape(-1)}
