import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import bf16_round, f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    rows, cols = int(params["ROWS"]), int(args["n_cols"])
    x = f64(args, "X", "bfloat16", rows * cols).reshape(rows, cols)
    w = f64(args, "W", "bfloat16", cols)
    eps, offset = float(np.float32(args["eps"])), float(np.float32(args["offset"]))
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    y = bf16_round(x * rstd) * (offset + w)     # Llama casting: x * rstd back to bf16 first
    return {"Y": y.reshape(-1), "RSTD": rstd.reshape(-1)}
