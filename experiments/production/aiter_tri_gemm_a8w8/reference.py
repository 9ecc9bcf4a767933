import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    m, n, k = (int(params[p]) for p in "MNK")
    x = f64(args, "x", "float8_e4m3fnuz", m * k).reshape(m, k)
    w = f64(args, "w", "float8_e4m3fnuz", n * k).reshape(n, k)
    y = (x @ w.T) * args["x_scale"][:m, None].astype(np.float64) * args["w_scale"][None, :n]
    return {"y": y.reshape(-1)}
