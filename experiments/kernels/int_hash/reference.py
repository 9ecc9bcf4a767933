import numpy as np


def reference(args: dict) -> dict:
    """Exact uint32 (wrapping) model of the kernel."""
    n = int(args["n"])
    u = np.uint32
    with np.errstate(over="ignore"):
        h = args["in"][:n].astype(np.uint32) ^ u(int(args["seed"]) & 0xFFFFFFFF) ^ np.arange(n, dtype=np.uint32)
        h = h ^ (h >> u(16))
        h = h * u(0x7FEB352D)
        h = h ^ (h >> u(15))
        h = h * u(0x846CA68B)
        h = h ^ (h >> u(16))
        h = h + ((h << u(3)) ^ (h >> u(5)))
    out = np.zeros(args["out"].shape[0], dtype=np.uint32)
    out[:n] = h
    return {"out": out}
