"""Value ranges: the intervals an LDS address can take, per lane class and EXEC."""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis.ranges import MAX, TOP, ValueRanges
from tests.targets.amdgpu.analysis.helpers import make_fn


def at(text: str, index: int, operand: str):
    return ValueRanges(make_fn(text)).operand(index, operand)


def test_work_item_fields_and_wave_id():
    code = """
    v_and_b32_e32 v1, 0x3ff, v0
    v_lshrrev_b32_e32 v2, 6, v1
    v_readfirstlane_b32 s4, v2
    s_lshl_b32 s5, s4, 10
    v_lshlrev_b32_e32 v3, 2, v1
    v_add_u32_e32 v3, s5, v3
    v_bfe_u32 v4, v0, 10, 10
    v_lshrrev_b32_e32 v5, 10, v0
    ds_write_b32 v3, v1
    """
    assert at(code, 8, "v1") == (0, 1023)
    assert at(code, 8, "s4") == (0, 15)
    assert at(code, 8, "v3") == (0, 15 * 1024 + 4 * 1023)
    assert at(code, 8, "v4") == (0, 1023)
    assert at(code, 8, "v5") == (0, MAX >> 10)        # the packed id's top bits: no claim
    assert at(code, 8, "v0") == (0, MAX)


def test_overflow_and_unknown_sources_give_the_whole_range():
    code = """
    s_load_dword s4, s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32_e32 v1, s4
    v_mov_b32_e32 v2, 0x80000000
    v_add_u32_e32 v3, v2, v2
    v_sub_u32_e32 v4, 4, v2
    v_mul_i32_i24_e32 v5, 0x400000, v2
    s_endpgm
    """
    assert at(code, 7, "v1") == TOP
    assert at(code, 7, "v3") == TOP            # 2^31 + 2^31 wraps
    assert at(code, 7, "v4") == TOP            # 4 - 2^31 wraps
    assert at(code, 7, "v5") == TOP            # not a 24-bit operand
    assert at(code, 7, "v2") == (0x80000000, 0x80000000)


def test_a_write_under_a_narrower_exec_joins_with_the_old_value():
    code = """
    v_mov_b32_e32 v1, 8
    v_cmp_gt_u32_e32 vcc, 32, v0
    s_and_saveexec_b64 s[4:5], vcc
    v_mov_b32_e32 v1, 0x100
    s_mov_b64 exec, s[4:5]
    ds_read_b32 v2, v1
    """
    assert at(code, 4, "v1") == (8, 0x100)
    assert at(code, 5, "v1") == (8, 0x100)     # EXEC restored: both values are there


def test_extra_lanes_count_once_written_under_all_lanes():
    """Under ``exec = -1`` a partial wave's extra lanes run: their registers hold what a
    write under all lanes put there (the constant), nothing before that."""
    code = """
    v_mov_b32_e32 v1, 4
    s_mov_b64 exec, -1
    ds_read_b32 v2, v1
    v_mov_b32_e32 v3, 0x200
    s_mov_b64 exec, s[6:7]
    v_mov_b32_e32 v3, 0x10
    s_mov_b64 exec, -1
    ds_read_b32 v4, v3
    """
    assert at(code, 2, "v1") == (4, 4)            # extra lanes never written: no value
    assert at(code, 7, "v3") == (0x10, 0x200)     # the unknown-EXEC write joins


def test_a_growing_loop_address_is_widened_and_a_toggle_is_not():
    code = """
    v_lshlrev_b32_e32 v1, 2, v0
    v_and_b32_e32 v1, 0xfc, v1
    v_mov_b32_e32 v2, v1
    s_mov_b32 s4, 0
    loop:
    ds_read_b32 v3, v1
    ds_read_b32 v4, v2
    v_add_u32_e32 v1, 0x100, v1
    v_xor_b32_e32 v2, 0x400, v2
    s_add_u32 s4, s4, 1
    s_cmp_lt_u32 s4, 8
    s_cbranch_scc1 loop
    s_endpgm
    """
    assert at(code, 4, "v1") == TOP
    assert at(code, 5, "v2") == (0, 0x7ff)
    assert at(code, 4, "s4") == TOP                # a counter grows too: widened


def test_unreachable_code_has_no_state():
    code = """
    s_branch end
    ds_read_b32 v1, v0
    end:
    s_endpgm
    """
    assert ValueRanges(make_fn(code)).operand(1, "v0") is None
