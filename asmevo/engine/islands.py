"""Ring migration over a list of island populations, as a pure function."""
from __future__ import annotations

from typing import Sequence, TypeVar

from asmevo.engine.selection import best, worst_indices

T = TypeVar("T")


def migrate_ring(populations: Sequence[Sequence[T]], k: int) -> list[list[T]]:
    """Island ``i``'s ``k`` best replace the ``k`` worst of island ``i+1`` (mod N).

    Emigrants are chosen from the populations as they were before any
    replacement, so the result does not depend on the order islands are
    visited. Returns new lists; the inputs are untouched.
    """
    n = len(populations)
    out = [list(p) for p in populations]
    if n < 2 or k <= 0:
        return out
    emigrants = [best(p, k) for p in populations]
    for i in range(n):
        incoming = emigrants[(i - 1) % n]
        for pos, ind in zip(worst_indices(populations[i], k), incoming):
            out[i][pos] = ind
    return out
