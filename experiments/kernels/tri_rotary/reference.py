import numpy as np

HEAD_DIM = 128  # compile-time constant of the kernel


def reference(args: dict, params: dict) -> dict:
    nh = int(args["n_heads"])
    half = HEAD_DIM // 2
    t = int(params["T"])
    x = args["x"][: t * nh * HEAD_DIM].astype(np.float64).reshape(t, nh, HEAD_DIM)
    pos = args["positions"][:t].astype(np.int64)
    c = args["cos"].astype(np.float64).reshape(-1, half)[pos][:, None, :]
    s = args["sin"].astype(np.float64).reshape(-1, half)[pos][:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    out = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return {"out": out.reshape(-1)}
