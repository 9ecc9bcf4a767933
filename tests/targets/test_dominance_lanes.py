"""Dominators, natural loops and lane-aware liveness on hand-written kernels."""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.dominance import Dominators, natural_loops
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from tests.operators.rules.flowkit import LOOP_HEAD, LOOP_TAIL, program

V2 = R.operand_mask("v2")

# 0 preheader [0:5], 1 loop [5:13] (header and latch), 2 exit [13:16]
LOOP = LOOP_HEAD + "  v_mov_b32_e32 v5, 0x3fc00000" + LOOP_TAIL

# a loop whose body holds an if (header 1, then-block 2, latch 3), entered from 0
NESTED = """
  s_mov_b32 s8, 0
.Lhead:
  v_cmp_gt_u32_e32 vcc, 10, v0
  s_and_saveexec_b64 s[10:11], vcc
  s_cbranch_execz .Llatch
  v_add_u32_e32 v1, 1, v1
.Llatch:
  s_or_b64 exec, exec, s[10:11]
  s_add_u32 s8, s8, 1
  s_cmp_lt_u32 s8, 4
  s_cbranch_scc1 .Lhead
"""


def test_one_block_loop_has_its_preheader_and_exit():
    fn = program(LOOP).function("k")
    cfg = build_cfg(fn)
    loops = natural_loops(cfg)
    assert len(loops) == 1
    lp = loops[0]
    assert (lp.header, set(lp.body), lp.latches, lp.exits, lp.preheader) == \
        (1, {1}, (1,), ((1, 2),), 0)
    assert lp.instructions(cfg) == list(range(5, 13))


def test_dominators_of_a_loop_with_an_if():
    fn = program(NESTED).function("k")
    cfg = build_cfg(fn)
    dom = Dominators(cfg)
    assert [b.start for b in cfg.blocks] == [0, 1, 4, 5, 9]
    assert dom.idom == [0, 0, 1, 1, 3]
    assert dom.dominates(1, 3) and not dom.dominates(2, 3) and dom.dominates(0, 4)
    assert dom.instruction_dominates(1, 6) and not dom.instruction_dominates(4, 6)
    (lp,) = natural_loops(cfg, dom)
    assert (lp.header, set(lp.body), lp.latches, lp.preheader, lp.exiting) == \
        (1, {1, 2, 3}, (3,), 0, (3,))


def test_a_join_keeps_the_then_write_live_where_full_def_liveness_drops_it():
    # v2 is written under the then-mask (#3) and the else-mask (#5), read under both (#7)
    fn = program("""
      v_and_b32_e32 v1, 1, v0
      v_cmp_eq_u32_e32 vcc, 0, v1
      s_and_saveexec_b64 s[4:5], vcc
      v_mov_b32_e32 v2, 1
      s_xor_b64 exec, s[4:5], exec
      v_mov_b32_e32 v2, 2
      s_or_b64 exec, exec, s[4:5]
      v_add_u32_e32 v3, v2, v2
      s_load_dwordx2 s[6:7], s[0:1], 0x0
      v_lshlrev_b32_e32 v1, 2, v0
      s_waitcnt lgkmcnt(0)
      global_store_dword v1, v3, s[6:7]
    """).function("k")
    full = Liveness(fn)
    lanes = LaneLiveness(fn)
    assert not full.after(3) & V2            # LLVM-style: the else write "kills" it
    assert lanes.after(3) & V2               # lane-aware: the join reads its lanes
    L, P = lanes.split_after(5)
    assert P & V2 and not L & V2             # live after #5 in lanes beyond the else-mask
    # conservative: the analysis cannot tell that the two masks cover every lane read
    assert lanes.before(3) & V2 and not full.before(3) & V2


def test_same_mask_write_kills_and_cross_lane_reads_keep_every_lane():
    fn = program("""
      v_mov_b32_e32 v2, 1
      v_mov_b32_e32 v2, 2
      v_add_u32_e32 v3, v2, v2
      v_mov_b32_e32 v4, 3
      v_mov_b32_e32 v4, 5
      v_mov_b32_dpp v5, v4 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
      v_add_u32_e32 v3, v3, v5
      s_load_dwordx2 s[6:7], s[0:1], 0x0
      v_lshlrev_b32_e32 v1, 2, v0
      s_waitcnt lgkmcnt(0)
      global_store_dword v1, v3, s[6:7]
    """).function("k")
    lanes = LaneLiveness(fn)
    assert not lanes.after(0) & V2           # overwritten under the same EXEC
    v4 = R.operand_mask("v4")
    assert lanes.after(3) & v4               # the DPP read may take lanes #4 never wrote
    assert lanes.split_after(4)[1] & v4
