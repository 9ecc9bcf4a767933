"""``dead_code``: whole-function, lane-aware deletion on hand-written code, and through
the verifier on naive-corpus kernels whose compiler output has a dead move."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.flowkit import (Individual, context, corpus_context, program,
                                           same_results)
from tests.operators.rules.helpers import KERNELS

NAIVE = KERNELS.parent / "kernels_naive"
INPUTS = {"x": np.zeros(64, np.uint32), "y": np.zeros(64, np.uint32)}


def _run(body, **kw):
    prog = program(body)
    return prog, get_operator("dead_code", **kw).mutate(Individual(), context(prog)), None


def test_deletes_a_dead_chain_across_blocks_to_a_fixed_point():
    body = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_mul_lo_u32 v6, v0, 3
  v_add_u32_e32 v7, 1, v6
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 .Lend
  v_lshlrev_b32_e32 v8, 2, v7
.Lend:
  v_lshlrev_b32_e32 v5, 2, v0
  s_waitcnt lgkmcnt(0)
  global_store_dword v5, v0, s[6:7]
"""
    prog, edits, _ = _run(body)
    assert [(e.start, e.end, e.lines) for e in edits] == [
        (5, 6, ()),                                    # v8: never read
        (1, 3, ())]                                    # then v7, then v6
    same_results(prog, edits, INPUTS)


def test_keeps_the_then_write_a_divergent_join_reads():
    body = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_and_b32_e32 v1, 1, v0
  v_cmp_eq_u32_e32 vcc, 0, v1
  s_and_saveexec_b64 s[8:9], vcc
  v_mov_b32_e32 v2, 1
  s_xor_b64 exec, s[8:9], exec
  v_mov_b32_e32 v2, 2
  v_mov_b32_e32 v3, 9
  s_or_b64 exec, exec, s[8:9]
  v_lshlrev_b32_e32 v5, 2, v0
  s_waitcnt lgkmcnt(0)
  global_store_dword v5, v2, s[6:7]
"""
    prog, edits, _ = _run(body)
    assert [(e.start, e.end, e.lines) for e in edits] == [(7, 8, ())]     # only v3
    same_results(prog, edits, INPUTS)


def test_nothing_dead_is_a_reason():
    prog = program("  s_load_dwordx2 s[6:7], s[0:1], 0x8\n  v_lshlrev_b32_e32 v5, 2, v0\n"
                   "  s_waitcnt lgkmcnt(0)\n  global_store_dword v5, v0, s[6:7]\n")
    ctx = context(prog)
    assert isinstance(get_operator("dead_code").mutate(Individual(), ctx), Rejected)
    assert "no ALU instruction is dead" in ctx.reasons[-1]


@pytest.mark.parametrize("name, gone", [("mean_cols", "v_mov_b32_e32 v4, s9"),
                                        ("vecmat", "v_mov_b32_e32 v4, s8")])
def test_corpus_dead_moves_are_bit_equal(name, gone):
    edits = get_operator("dead_code").mutate(Individual(), corpus_context(NAIVE, name, 0))
    assert edits is not None and gone in edits[0].note
    ectx = EvalContext(spec_path=str(NAIVE / name), size="small", timing="none", seeds=(0, 1),
                       runs=1, isolate=False)
    assert evaluate_candidate(ectx, edits).verdict.equal
