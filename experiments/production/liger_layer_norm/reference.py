import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prod_ref import bf16_round, f64, np  # noqa: E402


def reference(args: dict, params: dict) -> dict:
    rows, cols = int(params["ROWS"]), int(args["n_cols"])
    x = f64(args, "X", "bfloat16", rows * cols).reshape(rows, cols)
    w, b = f64(args, "W", "bfloat16", cols), f64(args, "B", "bfloat16", cols)
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + float(np.float32(args["eps"])))
    return {"Y": ((x - mean) * rstd * w + b).reshape(-1), "Mean": mean.reshape(-1),
            "RSTD": rstd.reshape(-1)}
