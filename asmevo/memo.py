"""Module-level caches, one helper: every one has a name, a bound, ``clear()`` and
``stats()``, and :data:`REGISTRY` lists them, so :func:`clear_all` and :func:`stats`
reach them all (a test that wants a cold process, a report of what the caches hold).

Three shapes:

* :class:`Memo`: by value, a bounded dict with ``get``/``put``. When it holds
  ``maxsize`` entries a ``put`` makes room by its ``evict`` rule: ``"clear"`` (empty
  it: the cheapest, for memos whose entries are all alike), ``"oldest"`` (drop the
  first one stored) or ``"lru"`` (drop the one least recently asked for); ``weigh``
  and ``maxweight`` bound it by the size of what it holds as well;
* :class:`IdentityMemo`: by an object's identity, for objects immutable by
  convention whose hashing by value would cost what the memo saves;
* :func:`cached`: a function's results (``functools.lru_cache``, named and listed).

Every value a memo hands out is shared with every later caller: read-only by
convention (copy before changing one).
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")

MISS = object()     # a default for get() where None is a value a memo may hold

REGISTRY: dict[str, "Memo | IdentityMemo | _Cached"] = {}
EVICT = ("clear", "oldest", "lru")


def _register(name: str | None, memo):
    if name is not None:
        REGISTRY[name] = memo       # a reloaded module's memo replaces its old one
    return memo


class Memo(Generic[V]):
    """A named memo by value, bounded to ``maxsize`` entries (None: unbounded) and,
    with ``weigh``, to ``maxweight`` in all (``weigh(value)``: what one entry costs)."""

    __slots__ = ("name", "maxsize", "evict", "weigh", "maxweight", "weight", "hits",
                 "misses", "_entries")

    def __init__(self, name: str | None, maxsize: int | None, *, evict: str = "clear",
                 weigh: Callable[[V], int] | None = None, maxweight: int | None = None):
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"memo {name}: maxsize must be at least 1, not {maxsize}")
        if evict not in EVICT:
            raise ValueError(f"memo {name}: evict must be one of {EVICT}, not {evict!r}")
        if (weigh is None) != (maxweight is None):
            raise ValueError(f"memo {name}: give weigh and maxweight together")
        self.name, self.maxsize, self.evict = name, maxsize, evict
        self.weigh, self.maxweight, self.weight = weigh, maxweight, 0
        self.hits = self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        _register(name, self)

    def get(self, key: Hashable, default=None):
        """The value stored for ``key``, else ``default`` (pass :data:`MISS` where None
        is a value)."""
        got = self._entries.get(key, MISS)
        if got is MISS:
            self.misses += 1
            return default
        self.hits += 1
        if self.evict == "lru":
            self._entries.move_to_end(key)
        return got

    def put(self, key: Hashable, value: V) -> V:
        """Store ``value`` for ``key``, making room first where the memo is full;
        returns ``value``."""
        entries = self._entries
        if key in entries:
            self._drop(key)
        elif self.maxsize is not None and len(entries) >= self.maxsize:
            self._make_room(self.maxsize - 1)
        entries[key] = value
        if self.weigh is not None:
            self.weight += self.weigh(value)
            while self.weight > self.maxweight and len(entries) > 1:
                self._drop(next(iter(entries)))
        return value

    def _make_room(self, keep: int) -> None:
        if self.evict == "clear":
            self.clear()
            return
        while len(self._entries) > keep:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        value = self._entries.pop(key)
        if self.weigh is not None:
            self.weight -= self.weigh(value)

    def pop(self, key: Hashable, default=None):
        """Forget ``key`` (its value, else ``default``)."""
        if key not in self._entries:
            return default
        value = self._entries[key]
        self._drop(key)
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)      # the keys, oldest first

    def values(self):
        return self._entries.values()

    def clear(self) -> None:
        """Forget every entry, and the counts of hits and misses (as ``cache_clear``)."""
        self._entries.clear()
        self.weight = 0
        self.hits = self.misses = 0

    def stats(self) -> dict:
        return {"size": len(self._entries), "maxsize": self.maxsize, "hits": self.hits,
                "misses": self.misses}


class IdentityMemo(Generic[V]):
    """A bounded memo keyed by ``id(obj)``, with an optional extra hashable ``key``
    (one object, several answers); ``name`` lists it in :data:`REGISTRY` (a memo made
    per entry of another memo goes unnamed).

    Invariant: an entry holds a strong reference to its object, and a hit is trusted
    only when that object *is* the one asked about. While the memo holds an object its
    id cannot be handed to another, so an id found is never a later object's (and a
    colliding id, should one ever appear, is a miss, never a wrong answer).

    Bounded: when it holds ``size`` entries, the next :meth:`put` clears it first."""

    __slots__ = ("name", "size", "_entries")

    def __init__(self, size: int, name: str | None = None) -> None:
        if size < 1:
            raise ValueError(f"IdentityMemo size must be at least 1, not {size}")
        self.name, self.size = name, size
        self._entries: dict[Hashable, tuple[object, V]] = {}
        _register(name, self)

    def get(self, obj: object, key: Hashable = None, default=None):
        """The value remembered for ``obj`` (and ``key``), else ``default`` (pass
        :data:`MISS` where None is a value)."""
        hit = self._entries.get(id(obj) if key is None else (id(obj), key))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return default

    def put(self, obj: object, value: V, key: Hashable = None) -> V:
        """Remember ``value`` for ``obj`` (and ``key``); returns ``value``."""
        entries = self._entries
        if len(entries) >= self.size:
            entries.clear()
        entries[id(obj) if key is None else (id(obj), key)] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def stats(self) -> dict:
        return {"size": len(self._entries), "maxsize": self.size}


class _Cached:
    """A function memo in :data:`REGISTRY`: its ``functools.lru_cache``."""

    __slots__ = ("fn",)

    def __init__(self, fn) -> None:
        self.fn = fn

    def clear(self) -> None:
        self.fn.cache_clear()

    def stats(self) -> dict:
        info = self.fn.cache_info()
        return {"size": info.currsize, "maxsize": info.maxsize, "hits": info.hits,
                "misses": info.misses}


def cached(name: str, maxsize: int | None) -> Callable:
    """Decorator: the function's results kept by its arguments (``maxsize`` calls, the
    least recently used dropped first; None: unbounded), listed as ``name``. The
    decorated function keeps ``cache_clear`` and ``cache_info``."""
    def wrap(fn):
        memo = functools.lru_cache(maxsize=maxsize)(fn)
        _register(name, _Cached(memo))
        return memo
    return wrap


def clear_all() -> None:
    """Empty every listed memo (this process only)."""
    for memo in REGISTRY.values():
        memo.clear()


def stats() -> dict[str, dict]:
    """Every listed memo's size, bound and (where counted) hits and misses, by name."""
    return {name: memo.stats() for name, memo in sorted(REGISTRY.items())}
