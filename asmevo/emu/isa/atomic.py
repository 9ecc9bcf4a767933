"""Atomics in lane order: what LDS (``ds_*``) and memory (``global_*``, ``flat_*``,
``buffer_*``) atomics share once their addresses are checked.

Lanes that hit the same address are chained in lane order, each seeing the
value the lane before it left.
"""
from __future__ import annotations

import numpy as np


def atomic_apply(old: np.ndarray, data: np.ndarray, offs: np.ndarray, fn, cmp=None):
    """Per-lane results of applying ``fn`` in lane order, with repeated addresses chained."""
    uniq = np.unique(offs)
    if uniq.size == offs.size:
        if cmp is not None:
            return np.where(old == cmp, data, old)
        return fn(old, data)
    new_all = np.empty_like(old)
    cur: dict[int, object] = {}
    pre = old.copy()
    for i in range(offs.size):
        k = int(offs[i])
        o = cur.get(k, old[i])
        pre[i] = o
        if cmp is not None:
            n = data[i] if o == cmp[i] else o
        else:
            n = fn(np.array([o]), data[i:i + 1])[0]
        cur[k] = n
        new_all[i] = n
    return pre, new_all
