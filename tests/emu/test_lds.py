"""LDS: reads/writes, read2/write2 forms, atomics, cross-lane DS ops, barriers."""
import numpy as np

from tests.emu.asmdsl import run_asm


def test_write_read_reverse():
    body = """
    v_lshlrev_b32_e32 v2, 2, v0
    ds_write_b32 v2, v1
    s_waitcnt lgkmcnt(0)
    v_sub_u32_e32 v3, 63, v0
    v_lshlrev_b32_e32 v3, 2, v3
    ds_read_b32 v4, v3
"""
    o = run_asm(body, v={1: np.arange(64, dtype=np.uint32) * 7}, lds=256)
    assert list(o.v(4)) == list(np.arange(64)[::-1] * 7)


def test_read2_write2_b64_and_b128():
    body = """
    v_lshlrev_b32_e32 v2, 4, v0
    v_mov_b32_e32 v16, v1
    v_add_u32_e32 v17, 1, v1
    v_add_u32_e32 v18, 2, v1
    v_add_u32_e32 v19, 3, v1
    ds_write_b128 v2, v[16:19]
    ds_read2_b32 v[10:11], v2 offset0:1 offset1:3
    ds_read_b64 v[12:13], v2 offset:8
"""
    o = run_asm(body, v={1: np.arange(64, dtype=np.uint32) * 10}, lds=1024)
    assert (o.v(10)[2], o.v(11)[2], o.v(12)[2], o.v(13)[2]) == (21, 23, 22, 23)


def test_lds_atomic_add_rtn():
    o = run_asm("v_mov_b32_e32 v2, 0\nv_mov_b32_e32 v3, 2\nds_add_rtn_u32 v4, v2, v3\n"
                "ds_read_b32 v5, v2", lds=16)
    assert o.v(5)[0] == 128 and sorted(o.v(4)) == list(range(0, 128, 2))


def test_bpermute_and_swizzle():
    body = """
    v_add_u32_e32 v2, 1, v0
    v_lshlrev_b32_e32 v2, 2, v2
    ds_bpermute_b32 v3, v2, v0
    ds_swizzle_b32 v4, v0 offset:swizzle(SWAP,1)
"""
    o = run_asm(body, lds=16)
    assert list(o.v(3)[:3]) == [1, 2, 3] and o.v(3)[63] == 0
    assert list(o.v(4)[:4]) == [1, 0, 3, 2]


def test_barrier_orders_waves_of_a_workgroup():
    """Wave 1 reads what wave 0 wrote before the barrier (4 waves, 256 items)."""
    body = """
    v_lshlrev_b32_e32 v2, 2, v0
    ds_write_b32 v2, v0
    s_waitcnt lgkmcnt(0)
    s_barrier
    v_sub_u32_e32 v3, 255, v0
    v_lshlrev_b32_e32 v3, 2, v3
    ds_read_b32 v4, v3
"""
    o = run_asm(body, block=256, lds=1024, grid=2)
    assert o.v(4, 0)[0] == 255 and o.v(4, 3)[63] == 0 and o.v(4, 5)[0] == 191


def test_lds_is_per_workgroup():
    body = """
    v_mov_b32_e32 v2, 0
    v_mov_b32_e32 v3, s2
    ds_write_b32 v2, v3
    s_waitcnt lgkmcnt(0)
    ds_read_b32 v4, v2
"""
    o = run_asm(body, grid=3, lds=16, exec_mask=1)
    assert [o.v(4, w)[0] for w in range(3)] == [0, 1, 2]
