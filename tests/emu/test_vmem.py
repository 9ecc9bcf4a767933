"""Global and buffer memory: loads, stores, sub-dword forms, atomics, buffer range checks."""
import numpy as np

from tests.emu.asmdsl import run_asm

ADDR = """
    v_lshlrev_b32_e32 v2, 2, v0
    v_mov_b32_e32 v3, 0
    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]
"""


def test_global_load_store_dword_and_offset():
    src = np.arange(80, dtype=np.uint32) * 3
    o = run_asm(ADDR + "global_load_dword v6, v[4:5], off offset:16\n"
                "v_lshl_add_u64 v[8:9], s[6:7], 0, v[2:3]\nglobal_store_dword v[8:9], v6, off",
                buffers={"src": src, "dst": np.zeros(64, np.uint32)},
                ptrs={"src": 4, "dst": 6})
    np.testing.assert_array_equal(o.buf("dst"), src[4:68])


def test_saddr_form_and_dwordx2():
    src = np.arange(128, dtype=np.uint32)
    o = run_asm("v_lshlrev_b32_e32 v2, 3, v0\nglobal_load_dwordx2 v[6:7], v2, s[4:5]\n"
                "global_store_dwordx2 v2, v[6:7], s[6:7]",
                buffers={"src": src, "dst": np.zeros(128, np.uint32)}, ptrs={"src": 4, "dst": 6})
    np.testing.assert_array_equal(o.buf("dst"), src)


def test_subdword_loads_and_stores():
    src = np.array([0x80, 0x7F] * 64, np.uint8)
    o = run_asm("v_mov_b32_e32 v3, 0\nv_mov_b32_e32 v2, v0\n"
                "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]\n"
                "global_load_sbyte v6, v[4:5], off\nglobal_load_ubyte v7, v[4:5], off\n"
                "v_lshl_add_u64 v[8:9], s[6:7], 0, v[2:3]\nglobal_store_byte v[8:9], v6, off",
                buffers={"src": src, "dst": np.zeros(128, np.uint8)}, ptrs={"src": 4, "dst": 6})
    assert o.v(6)[0] == 0xFFFFFF80 and o.v(7)[0] == 0x80 and o.v(6)[1] == 0x7F
    np.testing.assert_array_equal(o.buf("dst")[:64], src[:64])


def test_atomic_add_with_repeated_addresses_returns_pre_values():
    o = run_asm("v_mov_b32_e32 v2, 0\nv_mov_b32_e32 v3, 1\n"
                "global_atomic_add v6, v2, v3, s[4:5] sc0",
                buffers={"ctr": np.array([10, 0], np.uint32)}, ptrs={"ctr": 4})
    assert o.buf("ctr")[0] == 74
    assert sorted(o.v(6)) == list(range(10, 74))


def test_atomic_cmpswap_and_fadd():
    o = run_asm("v_mov_b32_e32 v2, 0\nv_mov_b32_e32 v10, 5\nv_mov_b32_e32 v11, 10\n"
                "global_atomic_cmpswap v6, v2, v[10:11], s[4:5] sc0\n"
                "v_mov_b32_e32 v7, 1.0\nv_mov_b32_e32 v8, 4\n"
                "global_atomic_add_f32 v8, v7, s[4:5]",
                buffers={"m": np.array([10, 0], np.uint32)}, ptrs={"m": 4}, exec_mask=1)
    assert o.v(6)[0] == 10 and o.buf("m")[0] == 5
    assert o.buf("m")[1:].view(np.float32)[0] == 1.0


def test_buffer_out_of_range_reads_zero_and_drops_writes():
    body = """
    s_mov_b32 s8, s4
    s_and_b32 s9, s5, 0xffff
    s_mov_b32 s10, 64
    s_mov_b32 s11, 0x27000
    v_lshlrev_b32_e32 v2, 2, v0
    buffer_load_dword v6, v2, s[8:11], 0 offen
    v_add_u32_e32 v6, 1, v6
    buffer_store_dword v6, v2, s[8:11], 0 offen offset:4
"""
    data = np.arange(64, dtype=np.uint32) + 100
    o = run_asm(body, buffers={"b": data}, ptrs={"b": 4})
    got = o.v(6)
    assert list(got[:16]) == list(range(101, 117)) and got[16] == 1 and got[63] == 1
    # stores at byte offsets 4..64: the last one (offset 64) is out of range and dropped
    b = o.buf("b")
    assert b[0] == 100 and list(b[1:16]) == list(range(101, 116)) and b[16] == 116
