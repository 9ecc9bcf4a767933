"""Bounded memos: by an object's identity (:class:`IdentityMemo`), or by value
(:func:`remember` into a plain dict).

The analyses remember answers per object (a Function's shape and graph, a graph's
waitcnt fixed point, an Effects' share of the producers, a program's padded
windows) where the object is immutable by convention and hashing it by value would
cost what the memo saves. Each such memo is an :class:`IdentityMemo`.
"""
from __future__ import annotations

from typing import Generic, Hashable, TypeVar

V = TypeVar("V")

MISS = object()     # a default for get() where None is a value a memo may hold


def remember(memo: dict, key: Hashable, value: V, size: int) -> V:
    """``memo[key] = value``, clearing ``memo`` first when it already holds ``size``
    entries (a bounded memo: cleared when full); returns ``value``."""
    if len(memo) >= size:
        memo.clear()
    memo[key] = value
    return value


class IdentityMemo(Generic[V]):
    """A bounded memo keyed by ``id(obj)``, with an optional extra hashable ``key``
    (one object, several answers).

    Invariant: an entry holds a strong reference to its object, and a hit is trusted
    only when that object *is* the one asked about. While the memo holds an object its
    id cannot be handed to another, so an id found is never a later object's (and a
    colliding id, should one ever appear, is a miss, never a wrong answer).

    Bounded: when it holds ``size`` entries, the next :meth:`put` clears it first.
    Values are shared with every later caller: read-only by convention (copy before
    changing one)."""

    __slots__ = ("size", "_entries")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"IdentityMemo size must be at least 1, not {size}")
        self.size = size
        self._entries: dict[Hashable, tuple[object, V]] = {}

    def get(self, obj: object, key: Hashable = None, default=None):
        """The value remembered for ``obj`` (and ``key``), else ``default`` (pass
        :data:`MISS` where None is a value)."""
        hit = self._entries.get(id(obj) if key is None else (id(obj), key))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return default

    def put(self, obj: object, value: V, key: Hashable = None) -> V:
        """Remember ``value`` for ``obj`` (and ``key``); returns ``value``."""
        remember(self._entries, id(obj) if key is None else (id(obj), key), (obj, value),
                 self.size)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
