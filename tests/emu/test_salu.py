"""Scalar ALU, compares and branches, against hand-computed values."""

import numpy as np

from tests.emu.asmdsl import run_asm


def test_add_carry_chain():
    o = run_asm("s_add_u32 s10, s4, s6\ns_addc_u32 s11, s5, s7",
                s={4: 0xFFFFFFFF, 5: 1, 6: 1, 7: 2})
    assert (o.s(10), o.s(11)) == (0, 4)
    assert not o.scc()


def test_sub_borrow_and_signed_overflow():
    o = run_asm("s_sub_u32 s10, s4, s5", s={4: 1, 5: 2})
    assert o.s(10) == 0xFFFFFFFF and o.scc()
    o = run_asm("s_add_i32 s10, s4, s5", s={4: 0x7FFFFFFF, 5: 1})
    assert o.s(10) == 0x80000000 and o.scc()


def test_shifts_mask_amount():
    o = run_asm("s_lshl_b32 s10, s4, s5\ns_lshr_b32 s11, s4, s6\ns_ashr_i32 s12, s7, 33",
                s={4: 0x80000001, 5: 33, 6: 32, 7: 0x80000000})
    assert o.s(10) == 2           # 33 & 31 == 1
    assert o.s(11) == 0x80000001  # 32 & 31 == 0
    assert o.s(12) == 0xC0000000


def test_shift_64_and_bfe():
    o = run_asm("s_lshl_b64 s[10:11], s[4:5], 36\ns_bfe_u32 s12, s6, s7\ns_bfe_i32 s13, s6, s7",
                s={4: 0xF, 5: 0, 6: 0x0000F0F0, 7: (8 << 16) | 4})
    assert (o.s(10), o.s(11)) == (0, 0xF0)
    assert o.s(12) == 0x0F
    assert o.s(13) == 0x0F


def test_mul_hi_and_movk_sign_extension():
    o = run_asm("s_mul_hi_u32 s10, s4, s5\ns_movk_i32 s11, 0x8000\ns_mul_i32 s12, s4, s5",
                s={4: 0xFFFFFFFF, 5: 0xFFFFFFFF})
    assert o.s(10) == 0xFFFFFFFE
    assert o.s(11) == 0xFFFF8000
    assert o.s(12) == 1


def test_cselect_and_compare():
    o = run_asm("s_cmp_lt_i32 s4, s5\ns_cselect_b32 s10, 7, 9", s={4: 0xFFFFFFFF, 5: 0})
    assert o.s(10) == 7
    o = run_asm("s_cmp_lt_u32 s4, s5\ns_cselect_b32 s10, 7, 9", s={4: 0xFFFFFFFF, 5: 0})
    assert o.s(10) == 9


def test_loop_with_scc_branch():
    body = """
    s_mov_b32 s10, 0
    s_mov_b32 s11, 0
L1:
    s_add_u32 s11, s11, s10
    s_add_u32 s10, s10, 1
    s_cmp_lt_u32 s10, 10
    s_cbranch_scc1 L1
"""
    o = run_asm(body)
    assert (o.s(10), o.s(11)) == (10, 45)


def test_saveexec_and_execz_branch():
    body = """
    v_cmp_gt_u32_e32 vcc, 4, v0
    s_and_saveexec_b64 s[10:11], vcc
    s_cbranch_execz SKIP
    v_mov_b32_e32 v5, 1
SKIP:
    s_or_b64 exec, exec, s[10:11]
    v_cmp_gt_u32_e32 vcc, 0, v0
    s_and_saveexec_b64 s[12:13], vcc
    s_cbranch_execz SKIP2
    v_mov_b32_e32 v6, 1
SKIP2:
    s_or_b64 exec, exec, s[12:13]
"""
    o = run_asm(body, v={5: 0, 6: 0})
    assert list(o.v(5)[:6]) == [1, 1, 1, 1, 0, 0]
    assert (o.s(10), o.s(11)) == (0xFFFFFFFF, 0xFFFFFFFF)
    assert not o.v(6).any()
    assert o.s(126) == 0xFFFFFFFF


def test_bit_counts():
    o = run_asm("s_bcnt1_i32_b64 s10, s[4:5]\ns_ff1_i32_b32 s11, s6\ns_flbit_i32_b32 s12, s6\n"
                "s_ff1_i32_b32 s13, 0", s={4: 0xF, 5: 0x80000000, 6: 0x00010100})
    assert o.s(10) == 5
    assert o.s(11) == 8
    assert o.s(12) == 15
    assert o.s(13) == 0xFFFFFFFF


def test_divergent_uniform_branch_splits_and_merges():
    """Waves take different paths on a per-wave SGPR value, then meet again."""
    body = """
    s_cmp_eq_u32 s2, 0
    s_cbranch_scc1 ZERO
    v_mov_b32_e32 v5, 2
    s_branch DONE
ZERO:
    v_mov_b32_e32 v5, 1
DONE:
    v_add_u32_e32 v5, 10, v5
"""
    o = run_asm(body, grid=3)
    assert o.v(5, 0)[0] == 11 and o.v(5, 1)[0] == 12 and o.v(5, 2)[0] == 12


def test_getreg_mode():
    o = run_asm("s_getreg_b32 s10, hwreg(HW_REG_MODE, 4, 2)")
    assert o.s(10) == 3


def test_literal_marked_lit_in_inline_range():
    # llvm-objdump (22) prints a 32-bit literal whose value an inline constant could
    # encode as lit(0x18): clang emits it for the relocated offset after s_getpc
    # (emufuzz fz1_1, gfx942 -O1: "s_add_u32 s0, s0, lit(0x18)" was refused)
    o = run_asm("s_mov_b32 s0, 5\n"
                ".long 0x8000ff00, 0x18\n"            # s_add_u32 s0, s0, lit(0x18)
                ".long 0x02060aff, 0x10",             # v_add_f32_e32 v3, lit(0x10), v5
                v={5: np.full(64, 2.0, np.float32)})
    assert o.s(0) == 29
    assert o.v(3)[0] == 0x40000000       # 2.0 + the denormal 0x10
