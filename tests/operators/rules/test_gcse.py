"""``gcse`` on hand-written code: a reload and a recomputation in a dominated block
are removed (bit-equal runs); a store or a barrier between keeps them."""
from __future__ import annotations

import numpy as np

from asmevo.operator import Rejected, get_operator
from tests.operators.rules.flowkit import Individual, context, program, same_results

INPUTS = {"x": np.zeros(64, np.uint32), "y": np.zeros(64, np.uint32)}
RELOAD = """
  s_load_dwordx2 s[10:11], s[0:1], 0x8
  v_lshlrev_b32_e32 v5, 2, v0
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 .Lend
  s_load_dwordx2 s[10:11], s[0:1], 0x8
  v_add_u32_e32 v6, 1, v0
  s_waitcnt lgkmcnt(0)
  global_store_dword v5, v6, s[10:11]
.Lend:
"""


def _run(body, **kw):
    prog = program(body, **kw)
    ctx = context(prog)
    return prog, get_operator("gcse").mutate(Individual(), ctx), ctx


def test_a_dominated_reload_is_deleted():
    prog, edit, _ = _run(RELOAD)
    # the reload goes, and with nothing left outstanding so does its wait
    assert (edit.start, edit.end, edit.lines) == (5, 8, ("v_add_u32_e32 v6, 1, v0",))
    assert "repeats #0" in edit.note
    same_results(prog, (edit,), INPUTS, grid=2)


def test_a_store_between_keeps_the_reload():
    body = RELOAD.replace("  s_cmp_eq_u32 s2, 0\n",
                          "  global_store_dword v5, v0, s[10:11]\n  s_cmp_eq_u32 s2, 0\n")
    _, edit, ctx = _run(body)
    assert isinstance(edit, Rejected)
    assert "may change memory between the loads" in ctx.reasons[-1]


RECOMPUTE = """
  s_load_dwordx2 s[10:11], s[0:1], 0x8
  v_mul_lo_u32 v2, v0, s2
  v_lshlrev_b32_e32 v5, 2, v0
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 .Lend
  v_mul_lo_u32 v3, v0, s2
  v_add_u32_e32 v6, v3, v2
  global_store_dword v5, v6, s[10:11]
.Lend:
"""


def test_a_recomputation_is_replaced_by_the_first_result():
    prog, edit, _ = _run(RECOMPUTE)
    assert (edit.start, edit.end, edit.lines) == (6, 8, ("v_add_u32_e32 v6, v2, v2",))
    same_results(prog, (edit,), INPUTS, grid=2)


def test_a_source_written_on_some_path_keeps_the_recomputation():
    # the branch skips to a join where the repeat reads a v0 one path changed
    body = RECOMPUTE.replace("s_cbranch_scc1 .Lend\n", "s_cbranch_scc1 .Ljoin\n"
                             "  v_add_u32_e32 v0, 1, v0\n.Ljoin:\n").replace(".Lend:\n", "")
    _, edit, ctx = _run(body)
    assert isinstance(edit, Rejected)
    assert "writes what the first reads" in ctx.reasons[-1]


def test_a_barrier_between_lds_reads_keeps_the_second():
    body = """
  v_lshlrev_b32_e32 v5, 2, v0
  ds_read_b32 v1, v5
  s_waitcnt lgkmcnt(0)
  s_barrier
  ds_read_b32 v1, v5
  s_waitcnt lgkmcnt(0)
  ds_write_b32 v5, v1
"""
    _, edit, ctx = _run(body, lds=256)
    assert isinstance(edit, Rejected)
    assert "'s_barrier' (#3) may change memory" in ctx.reasons[-1]


def test_a_reload_put_into_a_corpus_kernel_is_removed_bit_equal():
    """naive matmul: #16 loads C's address into s[8:9]; a copy of that load put at the
    start of the next block (into s[10:11], unread) is a dominated reload."""
    from asmevo.edits import Edit
    from asmevo.verify.evaluate import EvalContext, evaluate_candidate
    from tests.operators.rules.flowkit import corpus_context
    from tests.operators.rules.helpers import KERNELS

    naive = KERNELS.parent / "kernels_naive"
    inject = Edit("matmul", 19, 20, ("s_load_dwordx2 s[10:11], s[0:1], 0x10",
                                     "s_load_dwordx4 s[0:3], s[0:1], 0x0"), operator="test")
    edit = get_operator("gcse").mutate(Individual((inject,)), corpus_context(naive, "matmul", 0))
    assert edit.start == 19 and "s_load_dwordx2 s[10:11]" not in edit.lines
    assert "repeats #16" in edit.note
    ectx = EvalContext(spec_path=str(naive / "matmul"), size="small", timing="none",
                       seeds=(0, 1), runs=1, isolate=False)
    assert evaluate_candidate(ectx, (inject, edit)).verdict.equal
