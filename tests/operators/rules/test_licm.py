"""``licm`` on hand-written loops: the exact edits, bit-equal runs, and each refusal;
then through the verifier on corpus kernels it applies to."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.flowkit import (LOOP_HEAD, LOOP_TAIL, Individual, context,
                                           corpus_context, program, same_results)
from tests.operators.rules.helpers import KERNELS

ROOT = KERNELS.parent

HEAD, TAIL = LOOP_HEAD, LOOP_TAIL
INPUTS = {"x": np.linspace(-3, 5, 8 * 64, dtype=np.float32), "y": np.zeros(64, np.float32)}


def _licm(prog, seed=0):
    ctx = context(prog, seed)
    return get_operator("licm").mutate(Individual(), ctx), ctx


def test_hoists_an_invariant_constant_into_the_preheader():
    prog = program(HEAD + "  v_mov_b32_e32 v5, 0x3fc00000" + TAIL)
    edits, _ = _licm(prog)
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (5, 6, ()),                                                  # out of the loop
        (4, 5, ("s_waitcnt lgkmcnt(0)", "v_mov_b32_e32 v5, 0x3fc00000"))]   # preheader tail
    same_results(prog, edits, INPUTS)


def test_hoists_a_chain_in_order():
    prog = program(HEAD + "  s_mov_b32 s9, 0x3fc00000\n  v_mul_f32_e64 v5, s9, 2.0" + TAIL)
    edits, _ = _licm(prog)
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (5, 7, ()),
        (4, 5, ("s_waitcnt lgkmcnt(0)", "s_mov_b32 s9, 0x3fc00000", "v_mul_f32_e64 v5, s9, 2.0"))]
    same_results(prog, edits, INPUTS)


@pytest.mark.parametrize("body, why", [
    # the first trip reads v5's value from before the loop
    ("  v_add_f32_e32 v2, v2, v5\n  v_mov_b32_e32 v5, 0x3fc00000", "live into the loop header"),
    # a second definition in the loop
    ("  v_mov_b32_e32 v5, 0x3fc00000\n  v_add_f32_e32 v2, v2, v5\n  v_mov_b32_e32 v5, 1.0",
     "also written elsewhere in the loop"),
    # reads what the loop changes
    ("  v_mov_b32_e32 v5, v1", "no instruction of the loop is invariant"),
    # its SCC is read after it, and the loop's own s_add/s_cmp write SCC too
    ("  s_add_u32 s9, s6, 4\n  s_cselect_b32 s10, 1, 0\n  v_mov_b32_e32 v5, s10",
     "also written elsewhere in the loop"),
])
def test_refusals_name_their_reason(body, why):
    prog = program(HEAD + body + TAIL)
    edits, ctx = _licm(prog)
    assert isinstance(edits, Rejected)
    assert why in ctx.reasons[-1]


def test_a_dead_scc_write_does_not_stop_a_scalar_hoist():
    prog = program(HEAD + "  s_add_u32 s9, s6, 4\n  v_cvt_f32_u32_e32 v5, s9" + TAIL)
    edits, _ = _licm(prog)
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (5, 7, ()),
        (4, 5, ("s_waitcnt lgkmcnt(0)", "s_add_u32 s9, s6, 4", "v_cvt_f32_u32_e32 v5, s9"))]
    same_results(prog, edits, INPUTS)


# a loop with an if inside: header [1], then-block [2], latch [3]; v6 lives only in the
# then-block, under the narrowed EXEC
NESTED = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v1, 2, v0
  v_mov_b32_e32 v2, 0
  s_mov_b32 s8, 0
  s_waitcnt lgkmcnt(0)
.Lhead:
  v_add_u32_e32 v4, s8, v0
  v_cmp_gt_u32_e32 vcc, 40, v4
  s_and_saveexec_b64 s[10:11], vcc
  s_cbranch_execz .Llatch
  v_mov_b32_e32 v6, 0x40400000
  global_load_dword v3, v1, s[4:5]
  s_waitcnt vmcnt(0)
  v_fmac_f32_e32 v2, v3, v6
.Llatch:
  s_or_b64 exec, exec, s[10:11]
  v_add_u32_e32 v1, 0x100, v1
  s_add_u32 s8, s8, 1
  s_cmp_lt_u32 s8, 8
  s_cbranch_scc1 .Lhead
  v_lshlrev_b32_e32 v1, 2, v0
  global_store_dword v1, v2, s[6:7]
"""


def test_hoists_out_of_a_narrowed_block_when_exec_only_narrows_and_restores():
    prog = program(NESTED)
    edits, _ = _licm(prog)
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (9, 10, ()), (4, 5, ("s_waitcnt lgkmcnt(0)", "v_mov_b32_e32 v6, 0x40400000"))]
    same_results(prog, edits, INPUTS)


def test_refuses_a_vector_hoist_when_a_restore_may_widen_exec():
    # the restored mask was saved before the loop: EXEC inside may exceed the entry EXEC
    body = NESTED.replace("  s_mov_b32 s8, 0\n", "  s_mov_b32 s8, 0\n  s_mov_b64 s[12:13], exec\n") \
        .replace("s_or_b64 exec, exec, s[10:11]", "s_or_b64 exec, exec, s[12:13]")
    edits, ctx = _licm(program(body))
    assert isinstance(edits, Rejected)
    assert "may hold a mask from before the loop" in ctx.reasons[-1]


def test_refuses_a_result_the_code_after_the_loop_reads():
    # v6 is read after the loop under the restored EXEC: in lanes the then-block never
    # wrote it keeps its value from before the loop (lane-aware liveness sees that)
    body = NESTED.replace("global_store_dword v1, v2, s[6:7]",
                          "global_store_dword v1, v6, s[6:7]")
    edits, ctx = _licm(program(body))
    assert isinstance(edits, Rejected)
    assert "live into the loop header" in ctx.reasons[-1]


def _verify(root, name, edits):
    ctx = EvalContext(spec_path=str(root / name), size="small", timing="none", seeds=(0, 1),
                      runs=1, isolate=False)
    return evaluate_candidate(ctx, tuple(edits)).verdict


@pytest.mark.parametrize("root, name", [(ROOT / "kernels", "asm_copy"),
                                        (ROOT / "kernels", "asm_scale"),
                                        (ROOT / "kernels_naive", "conv1d_naive")])
def test_corpus_hoists_are_bit_equal(root, name):
    ctx = corpus_context(root, name, 0)
    edits = get_operator("licm").mutate(Individual(), ctx)
    assert not isinstance(edits, Rejected), ctx.reasons
    assert len(edits) == 2 and edits[1].lines[-1].split()[0] != "s_waitcnt"
    assert _verify(root, name, edits).equal
