"""``occupancy_rename`` with live-range splitting: a value no one register can hold."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from asmevo.edits import Edit
from asmevo.operator import get_operator
from tests.operators.rules.flowkit import Individual, context, corpus_context, program, \
    same_results
from tests.operators.rules.loop_helpers import verdict

PROD = Path(__file__).resolve().parents[3] / "experiments" / "production"


def swing_kernel(exec_change: bool = False) -> str:
    """v0..v61 live from start to end; v62 live in the first half only, v63 in the second
    only; v64 (above the 8-wave threshold of 64) live throughout: 64 values live at every
    point, so a register below 64 is free there, but none for the whole of v64's life."""
    lines = ["s_load_dwordx2 s[4:5], s[0:1], 0x0",
             "v_lshlrev_b32_e32 v61, 2, v0"]
    lines += [f"v_add_u32_e32 v{r}, {r}, v0" for r in range(1, 61)]
    lines += ["v_mul_lo_u32 v64, v0, v0", "v_add_u32_e32 v62, 7, v0",
              "v_xor_b32_e32 v1, v62, v1"]          # v62's last read: free from here on
    if exec_change:
        lines += ["s_and_b64 exec, exec, -1"]        # narrows nothing, but writes EXEC
    lines += ["v_add_u32_e32 v63, 9, v0",          # v63 from here on
              "v_xor_b32_e32 v2, v63, v2"]
    lines += [f"v_add_u32_e32 v1, v{r}, v1" for r in range(2, 61)]
    lines += ["v_add_u32_e32 v1, v63, v1", "v_add_u32_e32 v1, v64, v1",
              "v_add_u32_e32 v1, v0, v1", "s_waitcnt lgkmcnt(0)",
              "global_store_dword v61, v1, s[4:5]"]
    return "\n".join(lines)


def test_a_value_moves_between_two_registers_and_the_kernel_crosses_to_8_waves():
    prog = program(swing_kernel(), buffers=1, nv=72)
    ctx = context(prog)
    result = get_operator("occupancy_rename").mutate(Individual(), ctx)
    assert isinstance(result, tuple), ctx.reasons
    lines = [t for e in result for t in e.lines]
    assert "v_mov_b32_e32 v62, v63" in lines          # v63 first, then v62
    assert "v_mul_lo_u32 v63, v0, v0" in lines
    assert "v_add_u32_e32 v1, v62, v1" in lines
    assert dict(result[-1].descriptor)["granulated_workitem_vgpr_count"] == 7
    assert "1 copies splitting live ranges" in result[0].note
    same_results(prog, result, {"y": np.zeros(64, np.uint32)})


def test_no_split_across_an_exec_change():
    prog = program(swing_kernel(exec_change=True), buffers=1, nv=72)
    ctx = context(prog)
    assert not isinstance(get_operator("occupancy_rename").mutate(Individual(), ctx), tuple)
    assert "EXEC changes while it is live" in ctx.reasons[0]


def test_liger_cross_entropy_crosses_to_8_waves_with_three_copies():
    """67 VGPRs (7 waves of 16-wave workgroups: one resident per CU); three exp results
    live across ~250 instructions each, split once each, give 64."""
    ctx = corpus_context(PROD, "liger_cross_entropy")
    result = get_operator("occupancy_rename").mutate(Individual(), ctx)
    assert isinstance(result, tuple), ctx.reasons
    assert "3 copies splitting live ranges" in result[0].note
    assert dict(result[-1].descriptor) == {"granulated_workitem_vgpr_count": 7,
                                           "accum_offset_field": 15}
    assert all(isinstance(e, Edit) for e in result)
    v = verdict(PROD / "liger_cross_entropy", result)
    assert v.equal, v.reason


def test_splitting_can_be_turned_off_for_ablations():
    prog = program(swing_kernel(), buffers=1, nv=72)
    ctx = context(prog)
    op = get_operator("occupancy_rename", split=False)
    assert not isinstance(op.mutate(Individual(), ctx), tuple)
    assert "splitting is off" in ctx.reasons[0]
