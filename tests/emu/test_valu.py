"""Vector ALU semantics: floats (NaN, -0, denormals, FMA rounding), integers
(carries, shifts >= 32), conversions, inline constants, DPP/SDWA/op_sel, EXEC."""
import math

import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm

F = np.float32


def lanes(*vals, dtype=np.float32):
    a = np.zeros(64, dtype)
    a[:len(vals)] = vals
    return a


def bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


def test_add_f32_special_values():
    a = lanes(1.0, -0.0, np.inf, np.nan, 1e-45, -0.0)
    b = lanes(2.0, 0.0, -np.inf, 1.0, 1e-45, -0.0)
    o = run_asm("v_add_f32_e32 v2, v0, v1", v={0: a, 1: b})
    r = o.vf(2)
    assert r[0] == 3.0
    assert r[1] == 0.0 and not math.copysign(1, r[1]) < 0      # -0 + +0 = +0
    assert np.isnan(r[2]) and np.isnan(r[3])
    assert r[4] == F(1e-45) * F(2)                                   # denormals kept (mode 3)
    assert bits(r[5]) == 0x80000000                             # -0 + -0 = -0


def test_denormals_flushed_when_mode_says_so():
    a = lanes(1e-45, 1.0)
    o = run_asm("v_add_f32_e32 v2, v0, v0", v={0: a}, den32=0)
    assert o.vf(2)[0] == 0.0 and o.vf(2)[1] == 2.0


def test_max_min_nan_and_signed_zero():
    a = lanes(np.nan, 1.0, -0.0, 0.0)
    b = lanes(2.0, np.nan, 0.0, -0.0)
    o = run_asm("v_max_f32_e32 v2, v0, v1\nv_min_f32_e32 v3, v0, v1", v={0: a, 1: b})
    assert list(o.vf(2)[:2]) == [2.0, 1.0]
    assert list(o.vf(3)[:2]) == [2.0, 1.0]
    assert bits(o.vf(2)[2]) == 0 and bits(o.vf(2)[3]) == 0
    assert bits(o.vf(3)[2]) == 0x80000000 and bits(o.vf(3)[3]) == 0x80000000


def test_fma_is_fused_and_correctly_rounded():
    # a*b = 1 + 2^-23 + 2^-24 ... chosen so that float64 rounding then float32 would differ
    a = F(1 + 2 ** -12)
    b = F(1 + 2 ** -12)
    c = F(-1.0)
    o = run_asm("v_fma_f32 v3, v0, v1, v2\nv_mul_f32_e32 v4, v0, v1\nv_add_f32_e32 v4, v4, v2\n"
                "v_fmac_f32_e32 v2, v0, v1", v={0: lanes(a), 1: lanes(b), 2: lanes(c)})
    exact = (1 + 2 ** -12) ** 2 - 1
    assert o.vf(3)[0] == F(exact)                 # 2^-11 + 2^-24: exact in f32
    assert o.vf(2)[0] == o.vf(3)[0]               # fmac is the same fused operation
    assert o.vf(4)[0] != o.vf(3)[0]               # mul then add rounds the product
    from asmevo.emu.isa.valu import OPS
    mad = OPS["v_mad_f32"][2](np.array([a]), np.array([b]), np.array([c]), flush=False)
    assert mad[0] == o.vf(4)[0]                   # v_mad_f32 (gfx90a-) is not fused


def test_fma_double_rounding_case():
    from asmevo.emu.numerics.exact import fma32
    from fractions import Fraction
    rng = np.random.default_rng(1)
    a = rng.standard_normal(20000).astype(F)
    b = rng.standard_normal(20000).astype(F)
    c = (-(a.astype(np.float64) * b)).astype(F) * F(1.0000001)
    got = fma32(a, b, c)
    for i in range(0, 20000, 997):
        want = F(float(Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))))
        assert got[i] == want


def test_inline_float_constants():
    o = run_asm("v_mul_f32_e32 v2, 0.5, v0\nv_add_f32_e32 v3, -4.0, v0\n"
                "v_mov_b32_e32 v4, 0.15915494\nv_add_u32_e32 v5, -1, v1",
                v={0: lanes(*([3.0] * 64)), 1: np.full(64, 5, np.uint32)})
    assert o.vf(2)[0] == 1.5 and o.vf(3)[0] == -1.0
    assert o.v(4)[0] == 0x3E22F983
    assert o.v(5)[0] == 4


def test_abs_neg_clamp_omod():
    o = run_asm("v_add_f32_e64 v2, -|v0|, v1 clamp\nv_add_f32_e64 v3, v0, v1 mul:2",
                v={0: lanes(-3.0, 0.25), 1: lanes(3.5, 0.25)})
    assert list(o.vf(2)[:2]) == [0.5, 0.0]
    # MODE.IEEE is set: hardware ignores omod (LLVM: "omod is ignored by hardware if
    # IEEE bit is enabled"); with IEEE clear the emulator refuses omod (not modeled)
    assert list(o.vf(3)[:2]) == [0.5, 0.5]
    with pytest.raises(UnsupportedInstruction, match="output modifier"):
        run_asm("v_add_f32_e64 v3, v0, v1 mul:2", v={0: lanes(1.0), 1: lanes(1.0)},
                directives=".amdhsa_ieee_mode 0")


def test_integer_carry_chain_64bit_add():
    lo_a = np.full(64, 0xFFFFFFFF, np.uint32)
    o = run_asm("v_add_co_u32_e32 v4, vcc, v0, v2\nv_addc_co_u32_e32 v5, vcc, v1, v3, vcc",
                v={0: lo_a, 1: np.full(64, 7, np.uint32), 2: np.arange(64, dtype=np.uint32),
                   3: np.zeros(64, np.uint32)})
    assert o.v(4)[0] == 0xFFFFFFFF and o.v(5)[0] == 7
    assert o.v(4)[1] == 0 and o.v(5)[1] == 8
    assert o.s(106) == 0 and o.s(107) == 0


def test_vector_shifts_mask_amount():
    o = run_asm("v_lshlrev_b32_e32 v2, v0, v1\nv_lshrrev_b32_e32 v3, 32, v1\n"
                "v_ashrrev_i32_e32 v4, 33, v1\nv_lshlrev_b64 v[6:7], 36, v[0:1]",
                v={0: np.full(64, 33, np.uint32), 1: np.full(64, 0x80000001, np.uint32)})
    assert o.v(2)[0] == 2 and o.v(3)[0] == 0x80000001 and o.v(4)[0] == 0xC0000000
    assert o.v(6)[0] == 0 and o.v(7)[0] == 33 << 4


def test_exec_partially_off():
    o = run_asm("v_mov_b32_e32 v2, 7", v={2: np.zeros(64, np.uint32)}, exec_mask=0b1010)
    assert list(o.v(2)[:5]) == [0, 7, 0, 7, 0]


def test_cvt_rules():
    a = lanes(3.7, -3.7, np.nan, 1e20, -1e20, np.inf, -0.5)
    o = run_asm("v_cvt_i32_f32_e32 v2, v0\nv_cvt_u32_f32_e32 v3, v0\nv_cvt_f16_f32_e32 v4, v0\n"
                "v_rndne_f32_e32 v5, v0", v={0: a})
    assert list(o.v(2)[:7].view(np.int32)) == [3, -3, 0, 2**31 - 1, -2**31, 2**31 - 1, 0]
    assert list(o.v(3)[:7]) == [3, 0, 0, 2**32 - 1, 0, 2**32 - 1, 0]
    h = (o.v(4) & 0xFFFF).astype(np.uint16).view(np.float16)
    assert h[0] == np.float16(3.7) and np.isinf(h[3]) and (o.v(4)[0] >> 16) == 0
    assert o.vf(5)[6] == 0.0


def test_compare_writes_zero_for_inactive_lanes_and_cndmask():
    o = run_asm("v_cmp_lt_f32_e64 s[10:11], v0, v1\nv_cndmask_b32_e64 v2, 1, 2, s[10:11]",
                v={0: np.zeros(64, F), 1: np.ones(64, F), 2: np.zeros(64, np.uint32)},
                exec_mask=0xFF)
    assert o.s(10) == 0xFF and o.s(11) == 0
    assert list(o.v(2)[7:10]) == [2, 0, 0]


def test_cmp_class_and_nan_compares():
    a = lanes(np.nan, -np.inf, 1.0, -0.0)
    o = run_asm("v_cmp_class_f32_e64 s[10:11], v0, 3\nv_cmp_neq_f32_e64 s[12:13], v0, v0\n"
                "v_cmp_lg_f32_e64 s[14:15], v0, v0", v={0: a})
    assert o.s(10) & 0xF == 0b0001
    assert o.s(12) & 0xF == 0b0001
    assert o.s(14) & 0xF == 0


def test_dpp_row_shr_and_bcast():
    v0 = np.arange(64, dtype=np.uint32)
    o = run_asm("v_mov_b32_dpp v2, v0 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1\n"
                "v_mov_b32_dpp v3, v0 row_shr:1 row_mask:0xf bank_mask:0xf\n"
                "v_mov_b32_dpp v4, v0 row_bcast:15 row_mask:0xa bank_mask:0xf",
                v={0: v0, 3: np.full(64, 99, np.uint32), 4: np.full(64, 99, np.uint32)})
    assert list(o.v(2)[:3]) == [0, 0, 1] and o.v(2)[16] == 0
    assert list(o.v(3)[:3]) == [99, 0, 1]
    assert o.v(4)[0] == 99 and o.v(4)[16] == 15 and o.v(4)[32] == 99 and o.v(4)[48] == 47


def test_dpp_quad_perm_add():
    v0 = np.arange(64, dtype=np.float32)
    o = run_asm("v_add_f32_dpp v2, v0, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
                v={0: v0})
    assert list(o.vf(2)[:4]) == [1.0, 1.0, 5.0, 5.0]


def test_sdwa_word_select():
    o = run_asm("v_xor_b32_sdwa v2, v0, v1 dst_sel:DWORD dst_unused:UNUSED_PAD "
                "src0_sel:WORD_1 src1_sel:DWORD",
                v={0: np.full(64, 0xABCD1234, np.uint32), 1: np.full(64, 0xF, np.uint32)})
    assert o.v(2)[0] == 0xABC2


def test_mul_hi_and_mad_u64():
    o = run_asm("v_mul_hi_u32 v2, v0, v1\nv_mad_u64_u32 v[4:5], s[10:11], v0, v1, v[6:7]",
                v={0: np.full(64, 0xFFFFFFFF, np.uint32), 1: np.full(64, 0xFFFFFFFF, np.uint32),
                   6: np.full(64, 5, np.uint32), 7: np.zeros(64, np.uint32)})
    p = 0xFFFFFFFF * 0xFFFFFFFF + 5
    assert o.v(2)[0] == 0xFFFFFFFE
    assert o.v(4)[0] == p & 0xFFFFFFFF and o.v(5)[0] == p >> 32


def test_bfe_perm_and_lshl_add_u64():
    o = run_asm("v_bfe_i32 v2, v0, 4, 4\nv_perm_b32 v3, v0, v1, v8\n"
                "v_lshl_add_u64 v[4:5], v[0:1], 2, v[6:7]",
                v={0: np.full(64, 0x000000F0, np.uint32), 1: np.full(64, 0x11223344, np.uint32),
                   8: np.full(64, 0x0C000704, np.uint32), 6: np.full(64, 1, np.uint32),
                   7: np.zeros(64, np.uint32)})
    assert o.v(2)[0] == 0xFFFFFFFF
    # selectors (msb..lsb) 0x0C, 0x00, 0x07, 0x04: zero, byte0 of v1, byte3 of v0, byte0 of v0
    assert o.v(3)[0] == (0x00 << 24) | (0x44 << 16) | (0x00 << 8) | 0xF0
    val = (0x11223344 << 32 | 0xF0) << 2
    assert o.v(4)[0] == ((val & (2**64 - 1)) + 1) & 0xFFFFFFFF


def test_division_sequence_matches_ieee():
    """The compiler's f32 division (div_scale, rcp, fma, div_fmas, div_fixup)."""
    body = """
    v_div_scale_f32 v2, s[10:11], v1, v1, v0
    v_div_scale_f32 v3, vcc, v0, v1, v0
    v_rcp_f32_e32 v4, v2
    v_fma_f32 v5, -v2, v4, 1.0
    v_fmac_f32_e32 v4, v5, v4
    v_mul_f32_e32 v5, v3, v4
    v_fma_f32 v6, -v2, v5, v3
    v_fmac_f32_e32 v5, v6, v4
    v_fma_f32 v2, -v2, v5, v3
    v_div_fmas_f32 v2, v2, v4, v5
    v_div_fixup_f32 v7, v2, v1, v0
"""
    rng = np.random.default_rng(0)
    n = rng.standard_normal(64).astype(F) * F(1e3)
    d = rng.standard_normal(64).astype(F)
    n[:4] = [1.0, 0.0, 1.0, np.inf]
    d[:4] = [0.0, 0.0, 3.0, 2.0]
    o = run_asm(body, v={0: n, 1: d})
    with np.errstate(all="ignore"):
        want = n / d
    np.testing.assert_array_equal(o.vf(7)[4:], want[4:])
    assert np.isinf(o.vf(7)[0]) and np.isnan(o.vf(7)[1]) and o.vf(7)[2] == want[2]
    assert np.isinf(o.vf(7)[3])


def test_packed_f32_and_pk_mov():
    o = run_asm("v_pk_add_f32 v[4:5], v[0:1], v[2:3] neg_lo:[0,1] neg_hi:[0,1]\n"
                "v_pk_mov_b32 v[6:7], v[0:1], v[2:3] op_sel:[1,0]",
                v={0: lanes(*[5.0] * 64), 1: lanes(*[7.0] * 64), 2: lanes(*[1.0] * 64),
                   3: lanes(*[2.0] * 64)})
    assert o.vf(4)[0] == 4.0 and o.vf(5)[0] == 5.0
    assert o.vf(6)[0] == 7.0 and o.vf(7)[0] == 1.0


def test_fma_mix_with_f16_sources():
    h = np.float16(1.5).view(np.uint16)
    o = run_asm("v_fma_mix_f32 v2, v0, 1.0, v1 op_sel_hi:[1,1,0]",
                v={0: np.full(64, h, np.uint32), 1: lanes(*[0.25] * 64)})
    assert o.vf(2)[0] == 1.75


def test_readlane_writelane_readfirstlane():
    o = run_asm("v_readlane_b32 s10, v0, 5\nv_writelane_b32 v1, s11, 3\nv_readfirstlane_b32 s12, v0",
                v={0: np.arange(64, dtype=np.uint32) * 2, 1: np.zeros(64, np.uint32)},
                s={11: 77}, exec_mask=0xF0)
    assert o.s(10) == 10 and o.v(1)[3] == 77 and o.s(12) == 8


def test_mbcnt_gives_lane_index():
    o = run_asm("v_mbcnt_lo_u32_b32 v2, -1, 0\nv_mbcnt_hi_u32_b32 v2, -1, v2")
    assert list(o.v(2)) == list(range(64))


def test_mfma_32x32x8_f16_matches_numpy():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((32, 8)).astype(np.float16)
    B = rng.standard_normal((8, 32)).astype(np.float16)
    lanes_ = np.arange(64)
    a_regs = np.zeros((2, 64), np.uint32)
    b_regs = np.zeros((2, 64), np.uint32)
    for l in lanes_:
        ka = 4 * (l // 32)
        av = A[l % 32, ka:ka + 4].view(np.uint16).astype(np.uint32)
        bv = B[ka:ka + 4, l % 32].view(np.uint16).astype(np.uint32)
        a_regs[:, l] = [av[0] | av[1] << 16, av[2] | av[3] << 16]
        b_regs[:, l] = [bv[0] | bv[1] << 16, bv[2] | bv[3] << 16]
    v = {20: a_regs[0], 21: a_regs[1], 22: b_regs[0], 23: b_regs[1]}
    o = run_asm("v_mfma_f32_32x32x8_f16 v[0:15], v[20:21], v[22:23], 0", v=v)
    D = A.astype(np.float64) @ B.astype(np.float64)
    for r in range(16):
        rows = 8 * (r // 4) + 4 * (lanes_ // 32) + r % 4
        np.testing.assert_allclose(o.vf(r), D[rows, lanes_ % 32].astype(np.float32), rtol=1e-6)
