"""``scalarize`` on hand-written blocks (exact lines, bit-equal runs, refusals) and
through the verifier on naive-corpus division prologues."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.scalarize import salu_lines
from tests.operators.rules.flowkit import (Individual, context, corpus_context, program,
                                           same_results)
from tests.operators.rules.helpers import KERNELS

NAIVE = KERNELS.parent / "kernels_naive"
HEAD = "  s_load_dwordx4 s[4:7], s[0:1], 0x0\n  s_mov_b32 s8, 0x12345\n"
STORE = "  v_lshlrev_b32_e32 v5, 2, v0\n  s_waitcnt lgkmcnt(0)\n  global_store_dword v5, {}, s[6:7]\n"
INPUTS = {"x": np.zeros(64, np.uint32), "y": np.zeros(64, np.uint32)}


def _run(body):
    prog = program(body)
    ctx = context(prog)
    return prog, get_operator("scalarize").mutate(Individual(), ctx), ctx


@pytest.mark.parametrize("mnemonic, srcs, lines, scc", [
    ("v_subrev_u32_e32", ["s1", "s2"], ["s_sub_i32 s0, s2, s1"], True),
    ("v_lshlrev_b32_e64", ["3", "s2"], ["s_lshl_b32 s0, s2, 3"], True),
    ("v_mul_hi_u32", ["s1", "s2"], ["s_mul_hi_u32 s0, s1, s2"], False),
    ("v_lshl_add_u32", ["s1", "2", "s3"], ["s_lshl2_add_u32 s0, s1, s3"], True),
    ("v_bfe_u32", ["s1", "8", "4"], ["s_bfe_u32 s0, s1, 0x40008"], True),
    ("v_add3_u32", ["s1", "s2", "5"], ["s_add_i32 s0, s1, s2", "s_add_i32 s0, s0, 5"], True),
])
def test_salu_forms(mnemonic, srcs, lines, scc):
    assert salu_lines(mnemonic, "s0", srcs) == (lines, scc)


@pytest.mark.parametrize("mnemonic, srcs", [("v_mul_f32_e32", ["s1", "s2"]),
                                            ("v_lshl_add_u32", ["s1", "9", "s3"]),
                                            ("v_bfe_u32", ["s1", "s2", "4"])])
def test_no_salu_form_for_float_or_variable_fields(mnemonic, srcs):
    assert salu_lines(mnemonic, "s0", srcs) is None


def test_a_uniform_chain_moves_to_the_salu_and_its_reader_reads_the_sgpr():
    body = HEAD + """  v_mov_b32_e32 v1, s8
  v_mul_lo_u32 v2, v1, 7
  v_mul_hi_u32 v3, v2, v1
  v_add_u32_e32 v4, v3, v0
""" + STORE.format("v4")
    prog, edit, _ = _run(body)
    assert (edit.start, edit.end, edit.lines) == (2, 6, (
        "s_mov_b32 s0, s8", "s_mul_i32 s1, s0, 7", "s_mul_hi_u32 s2, s1, s0",
        "v_add_u32_e32 v4, s2, v0"))
    assert "36 VALU cycles fewer" in edit.note
    same_results(prog, (edit,), INPUTS)


def test_a_store_reader_gets_the_value_moved_back():
    body = HEAD + "  v_mov_b32_e32 v1, s8\n  v_mul_lo_u32 v2, v1, 7\n  v_mul_hi_u32 v3, v2, v1\n" \
        + STORE.format("v3")
    prog, edit, _ = _run(body)
    assert edit.lines == ("s_mov_b32 s0, s8", "s_mul_i32 s1, s0, 7", "s_mul_hi_u32 s2, s1, s0",
                          "v_mov_b32_e32 v3, s2")
    same_results(prog, (edit,), INPUTS)


def test_a_float_producer_stays_and_is_read_back():
    body = HEAD + "  v_cvt_f32_u32_e32 v1, s8\n  v_mul_lo_u32 v2, v1, 3\n" \
        "  v_add_u32_e32 v4, v2, v0\n" + STORE.format("v4")
    prog, edit, _ = _run(body)
    # gfx940 hazard valu-vgpr-readlane: one wait state between the VALU write and the read
    assert edit.lines == ("s_nop 0", "v_readfirstlane_b32 s0, v1", "s_mul_i32 s1, s0, 3",
                          "v_add_u32_e32 v4, s1, v0")
    same_results(prog, (edit,), INPUTS)


def test_an_add_stays_on_the_valu_where_scc_is_live():
    body = HEAD + """  s_cmp_eq_u32 s8, 0
  v_mov_b32_e32 v1, s8
  v_mul_lo_u32 v2, v1, 7
  s_cselect_b32 s9, 1, 0
  v_add_u32_e32 v4, s9, v2
""" + STORE.format("v4")
    # v_mov/v_mul_lo write no SCC: they convert; the reader of v2 takes the SGPR
    prog, edit, _ = _run(body)
    assert edit.lines[:2] == ("s_mov_b32 s0, s8", "s_mul_i32 s1, s0, 7")
    same_results(prog, (edit,), INPUTS)
    body = HEAD + """  s_cmp_eq_u32 s8, 0
  v_mov_b32_e32 v1, s8
  v_add_u32_e32 v2, 7, v1
  s_cselect_b32 s9, 1, 0
  v_add_u32_e32 v4, s9, v2
""" + STORE.format("v4")
    prog, edit, _ = _run(body)
    # s_add_i32 would clobber the SCC s_cselect reads: the add stays on the VALU and
    # reads the moved value from the SGPR
    assert edit.lines == ("s_mov_b32 s0, s8", "v_add_u32_e64 v2, 7, s0")
    same_results(prog, (edit,), INPUTS)


def test_an_exec_change_ends_uniformity():
    body = HEAD + """  v_mov_b32_e32 v1, s8
  v_cmp_gt_u32_e32 vcc, 9, v0
  s_and_saveexec_b64 s[10:11], vcc
  v_mul_lo_u32 v2, v1, 7
  s_or_b64 exec, exec, s[10:11]
""" + STORE.format("v2")
    _, edit, ctx = _run(body)
    assert isinstance(edit, Rejected)
    assert "saves no VALU cycles" in ctx.reasons[-1]


@pytest.mark.parametrize("name", ["avgpool2d", "bmm", "conv1d_naive"])
def test_division_prologues_are_bit_equal(name):
    ctx = corpus_context(NAIVE, name, 0)
    edit = get_operator("scalarize").mutate(Individual(), ctx)
    assert not isinstance(edit, Rejected) and "v_readfirstlane_b32" in edit.lines[0 if name != "avgpool2d"
                                                                   else 1]
    ectx = EvalContext(spec_path=str(NAIVE / name), size="small", timing="none", seeds=(0, 1),
                       runs=1, isolate=False)
    assert evaluate_candidate(ectx, (edit,)).verdict.equal
