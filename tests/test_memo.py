"""asmevo.memo: IdentityMemo (a hit is the value stored for the very object asked about,
never for another object with the same id; the memo holds its objects and is cleared
when full), Memo (by value, bounded by its eviction rule and weight), cached, and the
registry that clears and counts them all."""
from __future__ import annotations

import gc
import weakref

import pytest

from asmevo import memo as memo_module
from asmevo.memo import MISS, REGISTRY, IdentityMemo, Memo, cached, clear_all, stats


class Thing:
    """A plain object that can be weakly referenced."""


def test_a_hit_returns_the_value_stored_for_the_same_object():
    m, a = IdentityMemo(4), Thing()
    assert m.get(a) is None and m.get(a, default=MISS) is MISS
    value = ["answer"]
    assert m.put(a, value) is value
    assert m.get(a) is value and len(m) == 1


def test_none_is_a_value_told_apart_from_a_miss_by_MISS():
    m, a, b = IdentityMemo(4), Thing(), Thing()
    m.put(a, None)
    assert m.get(a, None, MISS) is None
    assert m.get(b, None, MISS) is MISS


def test_an_equal_but_different_object_is_a_miss():
    m = IdentityMemo(4)
    a, b = (1, [2]), (1, [2])
    assert a == b and a is not b
    m.put(a, "a")
    assert m.get(b) is None and m.get(a) == "a"


def test_an_object_with_the_same_id_as_a_remembered_one_is_a_miss(monkeypatch):
    # every object gets one id: the memo must still answer only for the object it holds
    monkeypatch.setattr(memo_module, "id", lambda obj: 42, raising=False)
    m, a, b = IdentityMemo(4), Thing(), Thing()
    m.put(a, "a")
    assert m.get(b) is None and m.get(b, default=MISS) is MISS
    assert m.get(a) == "a"
    m.put(a, "a2", key="k")
    assert m.get(b, "k") is None and m.get(a, "k") == "a2"
    m.put(b, "b")               # the colliding object replaces the entry, not shares it
    assert m.get(b) == "b" and m.get(a) is None


def test_the_memo_holds_its_objects_so_their_ids_are_not_reused():
    m, a = IdentityMemo(2), Thing()
    ref, ident = weakref.ref(a), id(a)
    m.put(a, "a")
    del a
    gc.collect()
    assert ref() is not None    # still alive: no later object can get ident while held
    assert ident not in {id(Thing()) for _ in range(1000)}
    m.put(Thing(), "x")
    m.put(Thing(), "y")         # full at 2: cleared first, the first object released
    gc.collect()
    assert ref() is None


def test_the_memo_is_cleared_when_full_and_never_exceeds_its_size():
    m = IdentityMemo(3)
    objs = [Thing() for _ in range(10)]
    for k, o in enumerate(objs):
        m.put(o, k)
        assert 1 <= len(m) <= 3
    # 10 puts into a memo of 3: cleared before the 4th, 7th and 10th put
    assert len(m) == 1 and m.get(objs[-1]) == 9
    assert [m.get(o) for o in objs[:-1]] == [None] * 9


def test_putting_again_for_a_remembered_object_replaces_without_growing():
    m, a = IdentityMemo(2), Thing()
    m.put(a, 1)
    m.put(a, 2)
    assert len(m) == 1 and m.get(a) == 2


def test_the_extra_key_tells_entries_of_one_object_apart():
    m, a, b = IdentityMemo(8), Thing(), Thing()
    m.put(a, "plain")
    m.put(a, "one", key=("f", 1))
    m.put(a, "two", key=("f", 2))
    assert m.get(a) == "plain" and m.get(a, ("f", 1)) == "one" and m.get(a, ("f", 2)) == "two"
    assert m.get(a, ("f", 3)) is None
    assert m.get(b, ("f", 1)) is None      # the key alone never finds another object's entry
    assert len(m) == 3


def test_clear_forgets_everything():
    m, a = IdentityMemo(4), Thing()
    m.put(a, 1, key="k")
    m.clear()
    assert len(m) == 0 and m.get(a, "k") is None


def test_a_memo_needs_room_for_one_entry():
    with pytest.raises(ValueError):
        IdentityMemo(0)


def test_a_memo_cleared_when_full_never_exceeds_its_size():
    m = Memo(None, 2)
    for k in range(5):
        assert m.put(k, str(k)) == str(k)
        assert len(m) <= 2
    assert len(m) == 1 and m.get(4) == "4" and m.get(3) is None
    m.put(4, "again")                           # a key it holds: replaced, nothing dropped
    m.put(5, "five")
    assert m.get(4) == "again" and m.get(5) == "five"


def test_oldest_and_lru_drop_one_entry_each():
    fifo, lru = Memo(None, 3, evict="oldest"), Memo(None, 3, evict="lru")
    for m in (fifo, lru):
        for k in "abc":
            m.put(k, k)
        assert m.get("a") == "a"                # asked for: the most recent under lru
        m.put("d", "d")
    assert "a" not in fifo and all(k in fifo for k in "bcd")
    assert "b" not in lru and all(k in lru for k in "acd")


def test_weight_bounds_what_a_memo_holds():
    m = Memo(None, 100, evict="lru", weigh=len, maxweight=10)
    m.put("a", b"x" * 6)
    m.put("b", b"y" * 3)
    assert m.weight == 9 and len(m) == 2
    m.put("c", b"z" * 4)                        # 13 > 10: the least recently used goes
    assert "a" not in m and m.weight == 7
    assert m.pop("b") == b"y" * 3 and m.weight == 4
    m.put("big", b"w" * 50)                     # the newest entry stays even alone over it
    assert list(m.values()) == [b"w" * 50] and m.weight == 50


def test_none_stored_is_told_apart_from_a_miss():
    m = Memo(None, 4)
    m.put("k", None)
    assert m.get("k", MISS) is None and m.get("other", MISS) is MISS
    assert m.stats() == {"size": 1, "maxsize": 4, "hits": 1, "misses": 1}


def test_bad_bounds_are_refused():
    for kw in ({"maxsize": 0}, {"maxsize": 2, "evict": "random"},
               {"maxsize": 2, "weigh": len}):
        with pytest.raises(ValueError):
            Memo("x", **kw)


def test_the_registry_reaches_every_named_memo():
    m, im = Memo("test.memo.values", 8), IdentityMemo(8, "test.memo.identity")
    calls = []

    @cached("test.memo.function", 4)
    def square(x):
        calls.append(x)
        return x * x

    a = Thing()
    m.put("k", 1)
    im.put(a, 2)
    assert square(3) == square(3) == 9 and calls == [3]
    got = stats()
    assert got["test.memo.values"]["size"] == 1 and got["test.memo.identity"]["size"] == 1
    assert got["test.memo.function"] == {"size": 1, "maxsize": 4, "hits": 1, "misses": 1}
    clear_all()
    assert len(m) == 0 and len(im) == 0 and square.cache_info().currsize == 0
    assert m.stats()["hits"] == 0               # clear resets the counts, as cache_clear
    for name in ("test.memo.values", "test.memo.identity", "test.memo.function"):
        del REGISTRY[name]


def test_the_product_caches_are_all_listed():
    # importing the verification path registers its memos by name
    import asmevo.verify.evaluate  # noqa: F401
    import asmevo.verify.inputs  # noqa: F401
    import asmevo.operators.rules.common  # noqa: F401
    names = set(stats())
    assert {"verify.baselines", "verify.built", "verify.poisoned", "rules.items",
            "amdgpu.cfg.by_shape", "targets.amdgpu.registers._operand_usage"} <= names
