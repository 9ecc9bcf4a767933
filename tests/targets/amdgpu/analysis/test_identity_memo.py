"""IdentityMemo: a hit is the value stored for the very object asked about, never for
another object with the same id; the memo holds its objects and is cleared when full."""
from __future__ import annotations

import gc
import weakref

import pytest

from asmevo.targets.amdgpu.analysis import memo as memo_module
from asmevo.targets.amdgpu.analysis.memo import MISS, IdentityMemo, remember


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


def test_remember_clears_a_plain_dict_when_full():
    d: dict = {}
    for k in range(5):
        assert remember(d, k, str(k), 2) == str(k)
        assert len(d) <= 2
    assert d == {4: "4"}
    remember(d, 4, "again", 1)                  # full: cleared even for a key it holds
    assert d == {4: "again"}
