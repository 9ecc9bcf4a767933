import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    m, n, k = (int(params[p]) for p in "MNK")
    x = f64(args, "x", "bfloat16", m * k).reshape(m, k)
    w = f64(args, "w", "bfloat16", n * k).reshape(n, k)
    return {"y": (x @ w.T).reshape(-1)}
