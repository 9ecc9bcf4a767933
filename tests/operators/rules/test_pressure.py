"""``occupancy_rename``: a value living across blocks above the threshold moves below
it and the descriptor follows (hand-written, bit-equal); the corpus's VGPR-limited
kernels are refused with the reason (their live values peak above the threshold)."""
from __future__ import annotations

import numpy as np

from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.targets.amdgpu.occupancy import occupancy
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.flowkit import (Individual, context, corpus_context, program,
                                           same_results)
from tests.operators.rules.helpers import KERNELS

ACROSS = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v70, v1, s[4:5]
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 .Lskip
  s_waitcnt vmcnt(0)
  v_add_f32_e32 v70, 1.0, v70
.Lskip:
  s_waitcnt vmcnt(0)
  global_store_dword v1, v70, s[6:7]
"""


def test_a_value_across_blocks_moves_below_the_threshold():
    prog = program(ACROSS, nv=72)
    fn = prog.function("k")
    assert occupancy(fn.kernel, prog.source.target).waves_per_simd == 7
    edits = get_operator("occupancy_rename").mutate(Individual(), context(prog))
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (9, 10, ("global_store_dword v1, v0, s[6:7]",)),       # one edit per block
        (7, 8, ("v_add_f32_e32 v0, 1.0, v0",)),
        (3, 4, ("global_load_dword v0, v1, s[4:5]",))]         # v0 is free after #1
    assert dict(edits[-1].descriptor)["granulated_workitem_vgpr_count"] == 0
    after = apply_edits(prog, edits).function("k")
    assert occupancy(after.kernel, prog.source.target).vgprs == 8
    # the hand-written kernel asks for 96 SGPRs: trim_registers then takes it to 8 waves
    trim = get_operator("trim_registers").mutate(Individual(edits), context(prog))
    final = apply_edits(prog, edits + (trim,)).function("k")
    assert occupancy(final.kernel, prog.source.target).waves_per_simd == 8
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    same_results(prog, edits, {"x": x, "y": np.zeros(64, np.float32)}, grid=2)


def test_refuses_when_live_values_peak_above_the_threshold():
    ctx = corpus_context(KERNELS, "tri_matmul_bf16", 0)
    assert isinstance(get_operator("occupancy_rename").mutate(Individual(), ctx), Rejected)
    assert "live values peak above the threshold" in ctx.reasons[-1]


def test_refuses_when_occupancy_is_not_vgpr_limited():
    ctx = corpus_context(KERNELS, "vector_add", 0)
    assert isinstance(get_operator("occupancy_rename").mutate(Individual(), ctx), Rejected)
    assert "not VGPR-limited" in ctx.reasons[-1]
