"""asmevo.counters: counter groups with fixed keys, read and reset through one API."""
from __future__ import annotations

import pytest

from asmevo import counters


def test_a_group_counts_reads_and_resets():
    g = counters.group("test.counters.a", ("hits", "misses"))
    g["hits"] += 1                      # as a module's STATS dict was used
    g.increment("hits", 2)
    counters.increment("test.counters.a", "misses")
    before = g.snapshot()
    assert before == {"hits": 3, "misses": 1} and dict(g) == before
    g.increment("misses")
    assert before["misses"] == 1        # a snapshot is a copy
    assert counters.snapshot()["test.counters.a"] == {"hits": 3, "misses": 2}
    counters.reset("test.counters.a")
    assert g.snapshot() == {"hits": 0, "misses": 0}
    del counters.GROUPS["test.counters.a"]


def test_an_unknown_count_is_an_error_not_a_new_key():
    g = counters.group("test.counters.b", ("one",))
    with pytest.raises(KeyError):
        g.increment("two")
    with pytest.raises(KeyError):
        g["two"] = 1
    assert list(g) == ["one"]
    del counters.GROUPS["test.counters.b"]


def test_reset_without_a_name_zeroes_every_group():
    a = counters.group("test.counters.c", ("x",))
    b = counters.group("test.counters.d", ("y",))
    a.increment("x", 5)
    b.increment("y", 7)
    counters.reset()
    assert a["x"] == 0 and b["y"] == 0
    del counters.GROUPS["test.counters.c"], counters.GROUPS["test.counters.d"]
