"""The emulator's module-level caches and counters live in asmevo.memo / asmevo.counters:
named, bounded, listed, and cleared by one call."""
from asmevo import counters, memo
from asmevo.emu.isa import decode
from asmevo.emu.run import batch, converge, launch

EMU_MEMOS = ("emu.decode.ops", "emu.native.pointers", "emu.native.bounds",
             "emu.exact.midpoint", "emu.converge.entries", "emu.image.images",
             "emu.launchcache.setups", "emu.launch.recovered", "emu.launch.tops",
             "emu.launch.operand_tops", "emu.batch.conflicts",
             "emu.run.launch.emulator_for", "emu.run.dispatch._cached_garbage")


def test_every_emulator_memo_is_listed_with_a_bound():
    import asmevo.emu.numerics.exact  # noqa: F401 - registers its memo
    stats = memo.stats()
    for name in EMU_MEMOS:
        assert name in stats, name
    bounded = [n for n in EMU_MEMOS if n != "emu.exact.midpoint"]   # one per float dtype
    assert all(stats[n]["maxsize"] for n in bounded)


def test_decode_memo_counts_hits_and_clear_all_empties_it():
    kw = dict(index=0, address=None, kernel=None, accum_offset=0, processor="gfx950")
    decode._OP_CACHE.clear()
    decode.decode_one("v_add_u32_e32 v1, v2, v3", **kw)
    decode.decode_one("v_add_u32_e32 v1, v2, v3", **kw)
    got = memo.stats()["emu.decode.ops"]
    assert (got["size"], got["hits"], got["misses"]) == (1, 1, 1)
    memo.clear_all()
    assert len(decode._OP_CACHE) == 0 and launch._operand_tops("v1, a[2:3]") == (2, 4)


def test_emulator_counters_are_groups_with_fixed_keys():
    assert counters.GROUPS["emu.batch"] is batch.STATS
    assert counters.GROUPS["emu.converge"] is converge.STATS
    before = counters.snapshot()["emu.converge"]
    converge.STATS["declined"] += 1
    assert converge.STATS["declined"] == before["declined"] + 1
    try:
        batch.STATS["no_such_count"] += 1
    except KeyError:
        pass
    else:
        raise AssertionError("a count the group was not made with was accepted")
