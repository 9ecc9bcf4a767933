"""s_setreg of MODE above bits [9:0] (what fp8 Triton kernels write), the f16 results
MODE.FP16_OVFL could clamp, and buffer stores whose range check drops some lanes."""
import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm
from tests.emu.test_fp8 import CASES, ref_encode

F16 = np.float16
SET_OVFL = "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 1\n"    # Triton's fp8 prologue


def _pk_fp8(prologue: str, directives: str = ""):
    xs = np.array(CASES + [0.0] * (64 - len(CASES)), np.float32)
    ys = np.roll(xs, 5)
    o = run_asm(prologue + "v_mov_b32 v3, 0\nv_cvt_pk_fp8_f32 v3, v1, v2",
                v={1: xs, 2: ys}, directives=directives)
    return xs, ys, o.v(3)


def test_setreg_fp16_ovfl_saturates_fp8_conversions_like_the_descriptor_bit():
    xs, ys, got = _pk_fp8(SET_OVFL)
    _, _, by_descriptor = _pk_fp8("", ".amdhsa_fp16_overflow 1")
    assert (got == by_descriptor).all()
    for lane in range(len(CASES)):      # +-inf and finite overflow saturate, NaN -> 0x80
        want = ref_encode(float(xs[lane]), "fp8", True) | \
            (ref_encode(float(ys[lane]), "fp8", True) << 8)
        assert got[lane] == want, (lane, xs[lane], ys[lane])
    assert got[CASES.index(7.0e4)] & 0xFF == 0x7F          # 70000 -> +240
    assert got[len(CASES) - 1] & 0xFF == 0x80                  # CASES ends with NaN


def test_setreg_can_clear_fp16_ovfl_again_and_getreg_reads_it_back():
    _, _, cleared = _pk_fp8(SET_OVFL + "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 0\n")
    assert cleared[CASES.index(7.0e4)] & 0xFF == 0x80          # overflow -> NaN code again
    o = run_asm(SET_OVFL + "s_getreg_b32 s20, hwreg(HW_REG_MODE, 23, 1)\n"
                "s_getreg_b32 s21, hwreg(HW_REG_MODE, 0, 32)")
    assert o.s(20) == 1 and o.s(21) >> 23 & 1 == 1 and o.s(21) & 0x3FF == 0x3F0


def test_bits_proved_irrelevant_are_stored_and_change_no_result():
    body = ("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 10, 1), 1\n"      # LOD_CLAMPED
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 24, 3), 7\n"      # POPS_PACKER, DISABLE_PERF
            "v_add_f32_e32 v2, v0, v1\ns_getreg_b32 s20, hwreg(HW_REG_MODE, 0, 32)")
    a, b = np.full(64, 1.5, np.float32), np.full(64, 2.25, np.float32)
    o = run_asm(body, v={0: a, 1: b})
    assert o.vf(2)[0] == 3.75
    assert o.s(20) & (1 << 10) and (o.s(20) >> 24) & 7 == 7


def test_exception_enables_debug_and_reserved_bits_run_only_at_zero():
    ok = run_asm("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 11, 12), 0\nv_add_f32_e32 v2, v0, v1",
                 v={0: np.full(64, 1.0, np.float32), 1: np.full(64, 2.0, np.float32)})
    assert ok.vf(2)[0] == 3.0                                    # the dispatch value: exact
    for off, size, val in [(12, 7, 1), (17, 1, 1), (11, 1, 1), (19, 4, 8)]:
        with pytest.raises(UnsupportedInstruction, match="exception enables"):
            run_asm(f"s_setreg_imm32_b32 hwreg(HW_REG_MODE, {off}, {size}), {val}")


@pytest.mark.parametrize("off,size", [(27, 1), (28, 1), (29, 3), (0, 32)])
def test_per_wave_mode_bits_are_never_written_by_setreg(off, size):
    with pytest.raises(UnsupportedInstruction, match="GPR_IDX_EN, VSKIP, CSP"):
        run_asm(f"s_setreg_imm32_b32 hwreg(HW_REG_MODE, {off}, {size}), 0")


def _f16(vals) -> np.ndarray:
    return np.array(vals + [0.0] * (64 - len(vals)), F16).view(np.uint16).astype(np.uint32)


def test_f16_overflow_from_finite_operands_is_refused_under_fp16_ovfl():
    big = _f16([60000.0, 1.0])
    with pytest.raises(UnsupportedInstruction, match="FP16_OVFL"):
        run_asm(SET_OVFL + "v_add_f16_e32 v2, v0, v1", v={0: big, 1: big})
    with pytest.raises(UnsupportedInstruction, match="FP16_OVFL"):      # the descriptor's bit
        run_asm("v_mul_f16_e32 v2, v0, v1", v={0: big, 1: big},
                directives=".amdhsa_fp16_overflow 1")
    with pytest.raises(UnsupportedInstruction, match="FP16_OVFL"):      # f32 -> f16
        run_asm(SET_OVFL + "v_cvt_f16_f32_e32 v2, v0",
                v={0: np.full(64, 1.0e6, np.float32)})
    o = run_asm("v_add_f16_e32 v2, v0, v1", v={0: big, 1: big})         # bit clear: inf
    assert o.v(2)[0] & 0xFFFF == 0x7C00 and o.v(2)[1] & 0xFFFF == 0x4000


def test_true_infinities_nans_and_finite_f16_results_run_under_fp16_ovfl():
    a = _f16([float("inf"), float("-inf"), float("nan"), 65504.0, -65504.0, 6.0e-8, 1.0])
    b = _f16([1.0, 2.0, 1.0, 0.0, -8.0, 6.0e-8, 2.0])
    o = run_asm(SET_OVFL + "v_add_f16_e32 v2, v0, v1", v={0: a, 1: b})
    got = o.v(2)[:7] & 0xFFFF
    ref = (a[:7].astype(np.uint16).view(F16) + b[:7].astype(np.uint16).view(F16)).view(np.uint16)
    assert list(got[[0, 1, 3, 4, 5, 6]]) == list(ref[[0, 1, 3, 4, 5, 6]])
    assert got[0] == 0x7C00 and got[1] == 0xFC00 and got[3] == 0x7BFF and got[6] == 0x4200
    assert got[2] & 0x7E00 == 0x7E00                               # a quiet NaN
    o = run_asm(SET_OVFL + "v_cvt_f16_f32_e32 v2, v0",                 # f32 inf stays inf
                v={0: np.full(64, -np.inf, np.float32)})
    assert o.v(2)[0] & 0xFFFF == 0xFC00


def test_packed_and_mixed_f16_overflow_are_refused_only_on_active_lanes():
    big = _f16([60000.0] * 64)
    pair = big | (big << 16)
    with pytest.raises(UnsupportedInstruction, match="FP16_OVFL"):
        run_asm(SET_OVFL + "v_pk_add_f16 v2, v0, v1", v={0: pair, 1: pair})
    with pytest.raises(UnsupportedInstruction, match="FP16_OVFL"):
        run_asm(SET_OVFL + "v_fma_mixlo_f16 v2, v0, v1, v0",
                v={0: np.full(64, 1.0e5, np.float32), 1: np.full(64, 2.0, np.float32)})
    o = run_asm(SET_OVFL + "v_pk_add_f16 v2, v0, v1", v={0: pair, 1: pair}, exec_mask=0)
    assert o.v(2)[0] == 0                                          # no active lane overflowed


def test_buffer_store_with_out_of_range_lanes_and_one_address_in_range():
    # lanes 0..15 in range (64-byte V#), lanes 0 and 1 store different values to one address,
    # lanes 16..63 are dropped by the range check (the case that crashed the conflict check)
    body = """
    s_mov_b32 s8, s4
    s_and_b32 s9, s5, 0xffff
    s_mov_b32 s10, 64
    s_mov_b32 s11, 0x27000
    v_lshlrev_b32_e32 v2, 2, v0
    v_cmp_eq_u32_e32 vcc, 1, v0
    v_cndmask_b32_e64 v2, v2, 0, vcc
    v_add_u32_e32 v6, 100, v0
    buffer_store_dword v6, v2, s[8:11], 0 offen
"""
    o = run_asm(body, buffers={"b": np.zeros(64, np.uint32)}, ptrs={"b": 4})
    b = o.buf("b")
    assert b[0] in (100, 101) and list(b[2:16]) == list(range(102, 116)) and b[16] == 0
    assert o.launch.mem.lane_conflicts and o.launch.mem.lane_conflicts[0]["lanes"] == 2
