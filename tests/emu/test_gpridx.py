"""VGPR index mode (s_set_gpr_idx_on/off): LLVM's lowering of dynamically indexed
private arrays kept in registers (emufuzz fz1_16: refused before)."""
import numpy as np

from tests.emu.asmdsl import run_asm

VALS = {r: np.full(64, 100 + r, np.uint32) for r in range(8, 16)}


def test_src0_and_dst_indexing_with_a_per_wave_index():
    # two workgroups of one wave each: s2 = workgroup id, so wave 0 and wave 1 index apart
    o = run_asm("s_add_u32 s0, s2, 3\n"
                "s_set_gpr_idx_on s0, gpr_idx(SRC0)\n"
                "v_mov_b32_e32 v1, v10\n"                 # v1 = v[10 + 3 + wg]
                "s_set_gpr_idx_off\n"
                "s_set_gpr_idx_on s2, gpr_idx(DST)\n"
                "v_mov_b32_e32 v20, v8\n"                 # v[20 + wg] = v8
                "s_set_gpr_idx_off\n"
                "v_mov_b32_e32 v2, v10",                  # index mode off again
                v={**VALS, 20: np.zeros(64, np.uint32), 21: np.zeros(64, np.uint32)}, grid=2)
    assert (o.v(1, 0) == 113).all() and (o.v(1, 1) == 114).all()
    assert (o.v(20, 0) == 108).all() and (o.v(21, 0) == 0).all()
    assert (o.v(20, 1) == 0).all() and (o.v(21, 1) == 108).all()
    assert (o.v(2, 1) == 110).all()
    assert o.s(124, 0) & 0xF0FF == 0x8000      # M0[7:0] = index 0, M0[15:12] = DST mode


def test_other_valu_in_index_mode_is_refused():
    import pytest

    from asmevo.emu.errors import UnsupportedInstruction
    with pytest.raises(UnsupportedInstruction, match="in VGPR index mode"):
        run_asm("s_mov_b32 s0, 1\n"
                "s_set_gpr_idx_on s0, gpr_idx(SRC0)\n"
                "v_add_f32_e32 v1, v10, v11\n"
                "s_set_gpr_idx_off", v=VALS)
