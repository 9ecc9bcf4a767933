"""``strength_reduce`` and ``address_fold`` on hand-written code (exact lines, bit-equal
runs over wrapping values, refusals), and ``address_fold`` through the verifier."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.strength import mul_lo_lines
from tests.operators.rules.flowkit import (Individual, context, corpus_context, program,
                                           same_results)
from tests.operators.rules.helpers import KERNELS

WRAP = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345678, 0xDEADBEEF] * 8,
                np.uint32)
INPUTS = {"x": WRAP, "y": np.zeros(64, np.uint32)}
LOAD = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v5, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v1, v5, s[4:5]
  s_waitcnt vmcnt(0)
"""
STORE = "  global_store_dword v5, v2, s[6:7]\n"


@pytest.mark.parametrize("c, lines", [
    (12, ["v_lshl_add_u32 v2, v1, 1, v1", "v_lshlrev_b32_e64 v2, 2, v2"]),
    (9, ["v_lshl_add_u32 v2, v1, 3, v1"]),
    (7, ["v_lshlrev_b32_e64 v2, 3, v1", "v_sub_u32_e64 v2, v2, v1"]),
    (56, ["v_lshlrev_b32_e64 v2, 3, v1", "v_sub_u32_e64 v2, v2, v1",
          "v_lshlrev_b32_e64 v2, 3, v2"]),
    (-8, ["v_lshlrev_b32_e64 v2, 3, v1", "v_sub_u32_e64 v2, 0, v2"]),
    (16, ["v_lshlrev_b32_e64 v2, 4, v1"]),
    (0, ["v_mov_b32_e32 v2, 0"]),
    (11, None),
])
def test_shift_add_forms(c, lines):
    assert mul_lo_lines("v2", "v1", c, None) == lines


def test_the_subtract_form_needs_a_scratch_register_when_it_overwrites_its_source():
    assert mul_lo_lines("v1", "v1", 7, None) is None
    assert mul_lo_lines("v1", "v1", 7, "v9") == ["v_lshlrev_b32_e64 v9, 3, v1",
                                                 "v_sub_u32_e64 v1, v9, v1"]


@pytest.mark.parametrize("mul, lines", [
    ("  s_mov_b32 s8, 0x70\n  v_mul_lo_u32 v2, v1, s8\n",          # 112 = 128 - 16
     ("v_lshlrev_b32_e64 v2, 3, v1", "v_sub_u32_e64 v2, v2, v1",
      "v_lshlrev_b32_e64 v2, 4, v2")),
    ("  v_mul_lo_u32 v2, 12, v1\n",
     ("v_lshl_add_u32 v2, v1, 1, v1", "v_lshlrev_b32_e64 v2, 2, v2")),
    ("  s_lshl_b32 s8, 1, s2\n  v_mul_lo_u32 v2, v1, s8\n",       # a uniform power of two
     ("v_lshlrev_b32_e64 v2, s2, v1",)),
])
def test_multiplies_become_shifts_bit_exactly(mul, lines):
    prog = program(LOAD + mul + STORE)
    edit = get_operator("strength_reduce").mutate(Individual(), context(prog))
    assert edit.lines == lines
    same_results(prog, (edit,), INPUTS, grid=3)


def test_a_shift_amount_changed_after_the_power_of_two_is_refused():
    body = LOAD + "  s_lshl_b32 s8, 1, s2\n  s_add_u32 s2, s2, 1\n  v_mul_lo_u32 v2, v1, s8\n" \
        + STORE
    ctx = context(program(body))
    assert isinstance(get_operator("strength_reduce").mutate(Individual(), ctx), Rejected)
    assert "no constant or power-of-two operand" in ctx.reasons[-1]


ZEXT = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v2, 2, v0
  v_mov_b32_e32 v3, 0
  s_waitcnt lgkmcnt(0)
  v_lshl_add_u64 v[8:9], s[4:5], 0, v[2:3]
  global_load_dword v1, v[8:9], off offset:4
  s_waitcnt vmcnt(0)
  global_store_dword v2, v1, s[6:7]
"""


def test_a_zero_extended_address_becomes_saddr_plus_voffset():
    prog = program(ZEXT)
    edits = get_operator("address_fold").mutate(Individual(), context(prog))
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (2, 6, ("s_waitcnt lgkmcnt(0)", "global_load_dword v1, v2, s[4:5] offset:4"))]
    same_results(prog, edits, {"x": np.arange(72, dtype=np.uint32), "y": np.zeros(64, np.uint32)})


def test_a_constant_add_folds_into_the_offset():
    body = ZEXT.replace("v_lshl_add_u64 v[8:9], s[4:5], 0, v[2:3]\n",
                        "v_lshl_add_u64 v[10:11], s[4:5], 0, v[2:3]\n"
                        "  v_lshl_add_u64 v[8:9], v[10:11], 0, 8\n")
    prog = program(body)
    ctx = context(prog)
    edits = get_operator("address_fold").mutate(Individual(), ctx)
    folded = [ln for e in edits for ln in e.lines if ln.startswith("global_load")]
    assert folded in (["global_load_dword v1, v[10:11], off offset:12"],
                      ["global_load_dword v1, v2, s[4:5] offset:4"])
    same_results(prog, edits, {"x": np.arange(72, dtype=np.uint32), "y": np.zeros(64, np.uint32)})


def test_an_exec_change_between_the_address_and_the_access_is_refused():
    body = ZEXT.replace("  global_load_dword v1, v[8:9], off offset:4\n",
                        "  v_cmp_gt_u32_e32 vcc, 40, v0\n  s_and_saveexec_b64 s[12:13], vcc\n"
                        "  global_load_dword v1, v[8:9], off offset:4\n")
    ctx = context(program(body))
    assert isinstance(get_operator("address_fold").mutate(Individual(), ctx), Rejected)
    assert "no global access through a foldable" in ctx.reasons[-1]


@pytest.mark.parametrize("name", ["asm_copy", "asm_scale", "vector_add"])
def test_corpus_folds_are_bit_equal(name):
    ctx = corpus_context(KERNELS, name, 0)
    edits = get_operator("address_fold").mutate(Individual(), ctx)
    if name == "vector_add":
        assert isinstance(edits, Rejected)                 # Triton's buffer addressing: nothing to fold
        return
    assert any("s[4:5]" in ln for e in edits for ln in e.lines)
    ectx = EvalContext(spec_path=str(KERNELS / name), size="small", timing="none",
                       seeds=(0, 1), runs=1, isolate=False)
    assert evaluate_candidate(ectx, edits).verdict.equal


def test_a_multiply_put_into_a_corpus_kernel_is_reduced_bit_equal():
    """asm_copy's address shift written as a multiply by an SGPR constant (s11 is free)."""
    from asmevo.edits import Edit
    inject = Edit("asm_copy", 12, 13, ("s_mov_b32 s11, 4", "v_mul_lo_u32 v2, v1, s11"),
                  operator="test")
    ctx = corpus_context(KERNELS, "asm_copy", 0)
    edit = get_operator("strength_reduce").mutate(Individual((inject,)), ctx)
    assert (edit.start, edit.end, edit.lines) == (13, 14, ("v_lshlrev_b32_e64 v2, 2, v1",))
    ectx = EvalContext(spec_path=str(KERNELS / "asm_copy"), size="small", timing="none",
                       seeds=(0, 1), runs=1, isolate=False)
    assert evaluate_candidate(ectx, (inject, edit)).verdict.equal
