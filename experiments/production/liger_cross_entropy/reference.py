import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import bf16_round, f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    bt, v = int(params["BT"]), int(args["n_cols"])
    n = float(np.float32(args["n_non_ignore"]))
    x = f64(args, "X", "bfloat16", bt * v).reshape(bt, v)
    y = args["Y"][:bt].astype(np.int64)
    m = x.max(axis=1, keepdims=True)
    p = np.exp(x - m)
    lse = (m + np.log(p.sum(axis=1, keepdims=True)))[:, 0]
    rows = np.arange(bt)
    loss = (lse - x[rows, y]) / n
    grad = p / p.sum(axis=1, keepdims=True)
    grad[rows, y] -= 1.0
    return {"loss": loss, "X": (grad / n).reshape(-1)}
