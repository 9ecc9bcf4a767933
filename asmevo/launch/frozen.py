"""Input arrays that never change once made: read-only, their digest computed once.

Verification launches every candidate of one K0 with the same inputs, and the
emulator keys what it reuses between launches by the inputs' bytes. An array made
by :func:`freeze` owns its data and is read-only, so its bytes cannot change while
it lives; :func:`digest` hashes it once. Any other array is hashed every time.
"""
from __future__ import annotations

import hashlib
import weakref

import numpy as np

from asmevo.memo import Memo

# id -> (a weak reference to the array, its digest); an entry goes with its array
_DIGESTS: Memo[tuple[weakref.ref, bytes]] = Memo("launch.frozen.digests", None)


def freeze(a: np.ndarray) -> np.ndarray:
    """``a`` (which must own its data) made read-only and known to :func:`digest`."""
    if a.base is not None:
        raise ValueError("only an array that owns its data can be frozen")
    a.setflags(write=False)
    h = hashlib.blake2b(a.view(np.uint8).reshape(-1).data, digest_size=20).digest() \
        if a.size else b""
    key = id(a)
    _DIGESTS.put(key, (weakref.ref(a, lambda _r, k=key: _DIGESTS.pop(k, None)), h))
    return a


def digest(a: np.ndarray) -> bytes | None:
    """The digest of a frozen array's bytes, or None for any other array."""
    got = _DIGESTS.get(id(a))
    if got is None or got[0]() is not a or a.flags.writeable:
        return None
    return got[1]
