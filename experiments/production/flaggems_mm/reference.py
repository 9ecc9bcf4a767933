import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    m, n, k = (int(params[p]) for p in "MNK")
    a = f64(args, "A", "bfloat16", m * k).reshape(m, k)
    b = f64(args, "B", "bfloat16", k * n).reshape(k, n)
    return {"C": (a @ b).reshape(-1)}
