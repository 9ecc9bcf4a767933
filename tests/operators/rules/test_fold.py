"""``fold_moves``: a move into a register read once, folded into its reader."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asmevo.edits import Edit
from asmevo.operator import Rejected, get_operator
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.operators.rules.fold import fold_block, substitute
from asmevo.operators.rules.structure import Flow
from tests.operators.rules.flowkit import Individual, context, corpus_context, program, \
    same_results, texts
from tests.operators.rules.loop_helpers import verdict

PROD = Path(__file__).resolve().parents[3] / "experiments" / "production"

HEAD = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_lshlrev_b32_e32 v1, 2, v0
  v_cvt_f32_u32_e32 v2, v0
"""
TAIL = """
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v3, s[4:5]
"""


def fold(body: str):
    prog = program(HEAD + body + TAIL, buffers=1)
    ctx = context(prog)
    return prog, ctx, get_operator("fold_moves").mutate(Individual(), ctx)


def test_constant_select_and_copy_fold_and_run_the_same():
    body = """
  v_mov_b32_e32 v5, 0x42000000
  v_cmp_gt_f32_e32 vcc, 0x41000000, v2
  v_min_f32_e32 v3, v5, v2
  s_mov_b32 s6, 0x3fb8aa3b
  v_mul_f32_e32 v3, s6, v3
  v_mov_b32_e32 v6, v3
  v_add_f32_e32 v3, v6, v2
"""
    prog, ctx, edit = fold(body)
    assert isinstance(edit, Edit), ctx.reasons
    assert "fold 3 move(s)" in edit.note
    new = texts(apply_edit(prog, edit))
    assert "v_min_f32_e32 v3, 0x42000000, v2" in new
    assert "v_mul_f32_e32 v3, 0x3fb8aa3b, v3" in new
    assert "v_add_f32_e32 v3, v3, v2" in new
    assert not any(t.startswith(("v_mov_b32", "s_mov_b32 s6")) for t in new)
    same_results(prog, [edit], {"y": np.zeros(64, np.float32)})


@pytest.mark.parametrize("body, why", [
    # read twice: the move is needed
    ("v_mov_b32_e32 v5, 0x40\n v_add_u32_e32 v3, v5, v0\n v_add_u32_e32 v3, v5, v3",
     "no move read once"),
    # an f16 operand reads 16 bits: 1.0 there is not the f32 bits the move wrote
    ("v_mov_b32_e32 v5, 1.0\n v_add_f16_e32 v3, v5, v2", "no move read once"),
    # a source modifier on a constant would change its bits
    ("v_mov_b32_e32 v5, 0x3f800000\n v_add_f32_e64 v3, -v5, v2", "no move read once"),
    # EXEC changes between the move and its reader
    ("v_mov_b32_e32 v5, 7\n s_mov_b64 exec, -1\n v_add_u32_e32 v3, v5, v0", "no move read once"),
    # the source is overwritten before the reader
    ("v_mov_b32_e32 v5, v2\n v_mov_b32_e32 v2, 0\n v_add_f32_e32 v3, v5, v2\n"
     " v_add_f32_e32 v3, v3, v2", "no move read once"),
    # a literal beside VCC breaks gfx942's constant-bus limit (llvm-mc says so)
    ("v_mov_b32_e32 v5, 0x7f800000\n v_cmp_gt_f32_e32 vcc, 0, v2\n"
     " v_cndmask_b32_e32 v3, v5, v2, vcc", "no move read once"),
    # a lane-crossing reader sees lanes the move did not write
    ("v_mov_b32_e32 v5, 9\n v_readfirstlane_b32 s6, v5\n v_mov_b32_e32 v3, s6",
     "no move read once"),
])
def test_refused(body, why):
    _, ctx, edit = fold(body)
    assert isinstance(edit, Rejected)
    assert why in ctx.reasons[0], ctx.reasons


def test_substitution_keeps_defs_and_wants_the_plain_operand():
    assert substitute("v_add_u32_e32 v5, v5, v1", "v5", "s3") == "v_add_u32_e32 v5, s3, v1"
    assert substitute("v_pk_mul_f32 v[2:3], v[4:5], v[6:7]", "v4", "v9") is None
    assert substitute("v_fma_f32 v1, |v5|, v2, v3", "v5", "2.0") is None
    assert substitute("v_fma_f32 v1, |v5|, v2, v3", "v5", "v9") is None
    # the accumulator is read through the destination operand: the move must stay
    assert substitute("v_fmac_f32_e32 v5, v5, v1", "v5", "v2") is None
    assert substitute("v_add_f16_e64 v1, v5, v2 op_sel:[1,0,0]", "v5", "s4") is None


def test_aiter_pa_copies_fold_and_verify():
    """AITer's paged attention copies a value (``v_mov_b32 v48, v96``) read once."""
    ctx = corpus_context(PROD, "aiter_pa_bf16_noquant_gqa16_1tg_4w", seed=1)
    flow = Flow(ctx.k0, ctx.kernel)
    blocks = [b for b in flow.cfg.blocks if b.end - b.start > 2]
    found = [(b.start, fold_block(flow, b.start, b.end, ctx.k0.source.target)[1])
             for b in blocks]
    assert any("v_mov_b32_e32 v48, v96" in d for _, ds in found for d in ds)
    edit = get_operator("fold_moves").mutate(Individual(), ctx)
    assert isinstance(edit, Edit), ctx.reasons
    v = verdict(PROD / "aiter_pa_bf16_noquant_gqa16_1tg_4w", [edit])
    assert v.equal, v.reason
