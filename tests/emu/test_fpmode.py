"""The kernel descriptor's float mode (and s_setreg of MODE) in float instructions:
round modes refused, denormal flushing per field, DX10 clamp, IEEE mode."""
import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm

U = np.uint32
DEN = np.full(64, np.uint32(0x00000010)).view(np.float32)        # a float32 denormal


def test_non_default_round_mode_is_refused_by_rounding_instructions():
    with pytest.raises(UnsupportedInstruction, match="round toward \\+infinity"):
        run_asm("v_add_f32_e32 v2, v0, v1", directives=".amdhsa_float_round_mode_32 1")
    # exact instructions and the other format's field are fine
    o = run_asm("v_max_f32_e32 v2, v0, v1\nv_add_f64 v[4:5], v[0:1], v[0:1]",
                v={0: np.full(64, 3.0, np.float32), 1: np.full(64, 2.0, np.float32)},
                directives=".amdhsa_float_round_mode_32 1")
    assert o.vf(2)[0] == 3.0
    with pytest.raises(UnsupportedInstruction, match="round toward zero for f64"):
        run_asm("v_add_f64 v[4:5], v[0:1], v[0:1]",
                directives=".amdhsa_float_round_mode_16_64 3")


def test_round_mode_set_at_run_time_is_refused_and_restored():
    with pytest.raises(UnsupportedInstruction, match="round toward -infinity"):
        run_asm("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 2\nv_mul_f32_e32 v2, v0, v1")
    o = run_asm("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 2\n"
                "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 0\nv_mul_f32_e32 v2, v0, v1\n"
                "s_getreg_b32 s20, hwreg(HW_REG_MODE, 0, 10)",
                v={0: np.full(64, 3.0, np.float32), 1: np.full(64, 2.0, np.float32)})
    assert o.vf(2)[0] == 6.0
    assert o.s(20) == (3 << 4) | (3 << 6) | (1 << 8) | (1 << 9)


def test_waves_with_different_modes_running_together_are_refused():
    body = ("v_readfirstlane_b32 s20, v0\ns_cmp_lt_u32 s20, 64\ns_cbranch_scc1 .Ldone\n"
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0\n.Ldone:\n"
            "v_add_f32_e32 v2, v0, v0")
    with pytest.raises(UnsupportedInstruction, match="different MODE"):
        run_asm(body, block=128)


def test_f16_f64_denormal_field():
    one, zero = np.ones(64, U), np.zeros(64, U)     # f64 5e-324 (lo=1, hi=0); f16 bits 1
    regs = {0: one, 1: zero, 2: zero, 3: zero, 7: one, 8: zero}
    body = "v_add_f64 v[4:5], v[0:1], v[2:3]\nv_add_f16_e32 v6, v7, v8"
    o = run_asm(body, v=regs, directives=".amdhsa_float_denorm_mode_16_64 0")
    assert o.v(4)[0] == 0 and o.v(5)[0] == 0 and o.v(6)[0] == 0
    o = run_asm(body, v=regs)
    assert o.v(4)[0] == 1 and o.v(6)[0] == 1    # mode 3 keeps f16/f64 denormals


def test_flush_destination_only_keeps_min_max_denormals():
    # FP_DENORM 1: inputs allowed, outputs flushed; min/max outputs are never flushed
    o = run_asm("v_mul_f32_e32 v2, 1.0, v0\nv_max_f32_e32 v3, 0, v0\nv_cmp_eq_f32_e64 s[20:21], 0, v0",
                v={0: DEN}, den32=1)
    assert o.v(2)[0] == 0 and o.v(3)[0] == 0x10
    assert o.s(20) == 0                          # inputs are not flushed: compares see it
    o = run_asm("v_max_f32_e32 v3, 0, v0\nv_cmp_eq_f32_e64 s[20:21], 0, v0", v={0: DEN}, den32=2)
    assert o.v(3)[0] == 0 and o.s(20) == 0xFFFFFFFF   # FP_DENORM 2 flushes the sources


def test_dx10_clamp_decides_whether_clamp_maps_nan_to_zero():
    nan = np.full(64, np.nan, np.float32)
    o = run_asm("v_add_f32_e64 v2, v0, v0 clamp", v={0: nan})
    assert o.v(2)[0] == 0
    o = run_asm("v_add_f32_e64 v2, v0, v0 clamp", v={0: nan}, directives=".amdhsa_dx10_clamp 0")
    assert np.isnan(o.vf(2)[0])


def test_signalling_nan_arithmetic_without_ieee_mode_is_refused():
    sn = np.full(64, np.uint32(0x7F800001)).view(np.float32)
    o = run_asm("v_add_f32_e32 v2, v0, v0", v={0: sn})
    assert o.v(2)[0] == 0x7FC00001               # IEEE mode: quieted, payload kept
    with pytest.raises(UnsupportedInstruction, match="signalling NaN"):
        run_asm("v_add_f32_e32 v2, v0, v0", v={0: sn}, directives=".amdhsa_ieee_mode 0")


def test_f32_transcendentals_flush_denormals_whatever_the_mode():
    big = np.full(64, 2.0 ** 127, np.float32)
    o = run_asm("v_rcp_f32_e32 v2, v0\nv_sqrt_f32_e32 v3, v1\nv_rcp_f16_e32 v4, v5",
                v={0: big, 1: DEN, 5: np.full(64, 0x7800, U)})   # rcp_f16(2^15) = 2^-15
    assert o.v(2)[0] == 0 and o.v(3)[0] == 0
    assert o.v(4)[0] == 0x0200                   # f16: "denormals are supported"


def test_generated_nan_is_the_default_nan():
    inf = np.full(64, np.inf, np.float32)
    o = run_asm("v_sub_f32_e32 v2, v0, v0\nv_mul_f32_e32 v3, 0, v0\nv_log_f32_e32 v4, v5",
                v={0: inf, 5: np.full(64, -1.0, np.float32)})
    assert o.v(2)[0] == 0xFFC00000 and o.v(3)[0] == 0xFFC00000 and o.v(4)[0] == 0xFFC00000


def test_mad_f32_flushes_in_flush_mode_and_refuses_kept_denormals():
    tiny = np.full(64, 2.0 ** -70, np.float32)
    body = "v_mad_f32 v3, v0, v1, v2"
    regs = {0: tiny, 1: tiny, 2: np.full(64, 1.0, np.float32)}
    o = run_asm(body, v=regs, proc="gfx90a", den32=0)          # product 2^-140 flushed
    assert o.vf(3)[0] == 1.0
    o = run_asm(body, v={0: tiny, 1: tiny, 2: np.zeros(64, np.float32)}, proc="gfx90a", den32=0)
    assert o.v(3)[0] == 0
    with pytest.raises(UnsupportedInstruction, match="denormal"):
        run_asm(body, v=regs, proc="gfx90a")                   # MODE keeps denormals
    o = run_asm(body, v={0: np.full(64, 3.0, np.float32), 1: np.full(64, 0.5, np.float32),
                         2: np.full(64, 1.0, np.float32)}, proc="gfx90a")
    assert o.vf(3)[0] == 2.5


def test_setreg_of_an_exception_enable_is_refused():
    with pytest.raises(UnsupportedInstruction, match="exception enables"):
        run_asm("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 12, 7), 1")     # an exception enable
