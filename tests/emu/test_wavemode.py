"""s_setvskip (MODE.VSKIP) and VGPR index mode (s_set_gpr_idx_on/off/idx/mode): per-wave
state, M0 fields, the roles that are indexed, and the refused special cases."""
import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm

V = {i: (np.arange(64, dtype=np.uint32) + 1000 * i) for i in range(1, 12)}


def test_vskip_skips_vector_alu_memory_and_lds_only_while_set():
    body = """
    s_mov_b32 s20, 0b101
    s_setvskip s20, 1          // bit 1 = 0: not skipping
    v_mov_b32 v20, 1
    s_setvskip s20, 2          // bit 2 = 1: skipping
    v_mov_b32 v21, 1
    v_lshlrev_b32_e32 v22, 2, v0
    ds_write_b32 v22, v1
    global_store_dword v22, v1, s[4:5]
    s_mov_b32 s21, 7           // scalar instructions still run
    s_setvskip 0, 0
    v_mov_b32 v23, 1
"""
    o = run_asm(body, v=V, buffers={"m": np.zeros(64, np.uint32)}, ptrs={"m": 4}, lds=256)
    assert (o.v(20) == 1).all() and (o.v(23) == 1).all()
    assert (o.v(21) == 0).all() and (o.v(22) == 0).all()
    assert (o.buf("m") == 0).all() and o.s(21) == 7


def test_vskip_is_per_wave():
    body = """
    s_lshr_b32 s20, s2, 0       // workgroup id: wave 0 of group 1 skips
    s_setvskip s20, 0
    v_mov_b32 v20, 5
    s_setvskip 0, 0
    v_lshlrev_b32_e32 v22, 2, v0
    s_lshl_b32 s21, s2, 8
    v_add_u32_e32 v22, s21, v22
    global_store_dword v22, v20, s[4:5]
"""
    o = run_asm(body, buffers={"m": np.full(128, 9, np.uint32)}, ptrs={"m": 4}, grid=2)
    m = o.buf("m")
    assert (m[:64] == 5).all() and (m[64:] != 5).all()


def test_index_mode_sources_destinations_and_m0():
    body = """
    s_mov_b32 m0, 0xabcd0000
    s_mov_b32 s20, 0x103          // only S0[7:0] = 3 is the index
    s_set_gpr_idx_on s20, gpr_idx(SRC0)
    v_add_u32_e32 v12, v1, v2     // v4 + v2
    s_set_gpr_idx_mode gpr_idx(SRC1,DST)
    v_add_u32_e32 v13, v1, v2     // v[13+3] = v1 + v5
    s_mov_b32 s21, 5
    s_set_gpr_idx_idx s21
    v_mov_b32_e32 v20, v1         // dst-only mode: v25 = v1
    s_mov_b32 s22, m0
    s_set_gpr_idx_off
    v_add_u32_e32 v14, v1, v2     // off: plain
"""
    o = run_asm(body, v=V)
    np.testing.assert_array_equal(o.v(12), V[4] + V[2])
    np.testing.assert_array_equal(o.v(16), V[1] + V[5])
    np.testing.assert_array_equal(o.v(25), V[1])
    np.testing.assert_array_equal(o.v(14), V[1] + V[2])
    assert o.s(22) == 0xABCDA005          # M0[15:12] = SRC1|DST, M0[7:0] = 5, rest kept


def test_index_mode_writelane_pk_mul_and_cvt():
    body = """
    s_mov_b32 s20, 2
    s_set_gpr_idx_on s20, gpr_idx(DST)
    s_mov_b32 s22, 7
    v_writelane_b32 v3, 0, s22
    s_set_gpr_idx_off
    s_set_gpr_idx_on s20, gpr_idx(SRC0)
    v_pk_mul_f32 v[30:31], v[6:7], v[8:9]
    v_cvt_f32_i32_e32 v32, v1
    s_set_gpr_idx_off
"""
    f = {i: np.full(64, float(i), np.float32) for i in range(6, 11)}
    o = run_asm(body, v={**V, **f})
    assert o.v(5)[7] == 0 and o.v(5)[6] == V[5][6] and o.v(3)[7] == V[3][7]
    np.testing.assert_array_equal(o.vf(30), np.full(64, 8.0 * 8.0, np.float32))
    np.testing.assert_array_equal(o.vf(31), np.full(64, 9.0 * 9.0, np.float32))
    np.testing.assert_array_equal(o.vf(32), V[3].astype(np.float32))


@pytest.mark.parametrize("text", ["v_readlane_b32 s30, v1, 0", "v_fmac_f32_e32 v2, v1, v1",
                                  "v_lshlrev_b32_e32 v2, v1, v2",
                                  "v_add_co_u32_e32 v2, vcc, v1, v2"])
def test_index_mode_special_cases_are_refused(text):
    with pytest.raises(UnsupportedInstruction):
        run_asm(f"s_mov_b32 s20, 1\ns_set_gpr_idx_on s20, gpr_idx(SRC0)\n{text}\n"
                "s_set_gpr_idx_off", v=V)


_IDX_VALS = {r: np.full(64, 100 + r, np.uint32) for r in range(8, 16)}


def test_index_mode_per_wave_index_src0_and_dst():
    # LLVM's lowering of a dynamically indexed private array kept in registers (emufuzz fz1_16)
    # two workgroups of one wave each: s2 = workgroup id, so wave 0 and wave 1 index apart
    o = run_asm("s_add_u32 s0, s2, 3\n"
                "s_set_gpr_idx_on s0, gpr_idx(SRC0)\n"
                "v_mov_b32_e32 v1, v10\n"                 # v1 = v[10 + 3 + wg]
                "s_set_gpr_idx_off\n"
                "s_set_gpr_idx_on s2, gpr_idx(DST)\n"
                "v_mov_b32_e32 v20, v8\n"                 # v[20 + wg] = v8
                "s_set_gpr_idx_off\n"
                "v_mov_b32_e32 v2, v10",                  # index mode off again
                v={**_IDX_VALS, 20: np.zeros(64, np.uint32), 21: np.zeros(64, np.uint32)}, grid=2)
    assert (o.v(1, 0) == 113).all() and (o.v(1, 1) == 114).all()
    assert (o.v(20, 0) == 108).all() and (o.v(21, 0) == 0).all()
    assert (o.v(20, 1) == 0).all() and (o.v(21, 1) == 108).all()
    assert (o.v(2, 1) == 110).all()
    assert o.s(124, 0) & 0xF0FF == 0x8000      # M0[7:0] = index 0, M0[15:12] = DST mode
