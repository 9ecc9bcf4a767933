import numpy as np


def reference(args: dict) -> dict:
    cin, cout, n, kw = (int(args[k]) for k in ("cin", "cout", "len", "kw"))
    x = args["x"].astype(np.float64).reshape(cin, n)
    w = args["w"].astype(np.float64).reshape(cout, cin, kw)
    lout = n - kw + 1
    cols = np.stack([x[:, k:k + lout] for k in range(kw)], axis=2)   # cin, lout, kw
    return {"y": np.einsum("oik,ilk->ol", w, cols).reshape(-1)}
