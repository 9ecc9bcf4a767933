"""``peephole``: each rule on small hand-written windows (injected into a real
kernel so liveness and hazards see real code), with the exact rewrite."""
from __future__ import annotations

import pytest

from asmevo.edits import Edit
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.peephole import strength_reduce
from tests.operators.rules.helpers import KERNELS, Individual, context

# asm_copy's block [12:19] (exec narrowed to the in-range lanes):
#   12 v_lshlrev_b32_e32 v2, 2, v1      13 v_mov_b32_e32 v3, 0
#   14 v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]
#   15 v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]
#   16 global_load_dword v8, v[4:5], off   17 s_waitcnt vmcnt(0)
#   18 global_store_dword v[6:7], v8, off


def _inject(lines, start=12, end=19):
    return Edit("asm_copy", start, end, tuple(lines), operator="test")


def _run(rule, inject, seed=0, window=(12, None)):
    ind = Individual((inject,))
    end = window[1] if window[1] is not None else 12 + len(inject.lines)
    ctx = context("asm_copy", seed, windows=[("asm_copy", window[0], end)])
    return get_operator("peephole", rules=(rule,)).mutate(ind, ctx), ctx


def _equal(*edits):
    ctx = EvalContext(spec_path=str(KERNELS / "asm_copy"), size="small", timing="none",
                      seeds=(0,), runs=1, isolate=False)
    return evaluate_candidate(ctx, tuple(edits)).verdict


@pytest.mark.parametrize("before, after", [
    ("v_mul_lo_u32 v1, v2, 8", "v_lshlrev_b32_e32 v1, 3, v2"),
    ("v_mul_lo_u32 v1, 16, s2", "v_lshlrev_b32_e64 v1, 4, s2"),
    ("v_mul_lo_u32 v1, v2, 1", "v_mov_b32_e32 v1, v2"),
    ("v_mul_hi_u32 v1, v2, 0x100", "v_lshrrev_b32_e32 v1, 24, v2"),
    ("s_mul_i32 s1, s2, 16", "s_lshl_b32 s1, s2, 4"),
    ("v_mul_lo_u32 v1, v2, 12", None),
    ("v_mul_lo_u32 v1, v2, -8", None),
    ("v_mul_lo_u32 v1, v2, v3", None),
])
def test_strength_reduction_table(before, after):
    assert strength_reduce(before, scc_dead=True) == after


def test_s_mul_becomes_a_shift_only_when_scc_is_dead():
    assert strength_reduce("s_mul_i32 s1, s2, 16", scc_dead=False) is None


def test_strength_rule_rewrites_a_multiply_in_place():
    code = ["v_mul_lo_u32 v2, v1, 4", "v_mov_b32_e32 v3, 0",
            "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
            "global_load_dword v8, v[4:5], off", "s_waitcnt vmcnt(0)",
            "global_store_dword v[6:7], v8, off"]
    inject = _inject(code)
    edit, _ = _run("strength", inject)
    assert (edit.start, edit.end, edit.lines) == (12, 13, ("v_lshlrev_b32_e32 v2, 2, v1",))
    assert _equal(inject, edit).equal


def test_dce_deletes_a_dead_write_and_nothing_else():
    code = ["v_lshlrev_b32_e32 v2, 2, v1", "v_mov_b32_e32 v9, 7", "v_mov_b32_e32 v3, 0",
            "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
            "global_load_dword v8, v[4:5], off", "s_waitcnt vmcnt(0)",
            "global_store_dword v[6:7], v8, off"]
    inject = _inject(code)
    edit, _ = _run("dce", inject)
    assert (edit.start, edit.end, edit.lines) == (13, 14, ())
    assert "v_mov_b32_e32 v9, 7" in edit.note
    assert _equal(inject, edit).equal


def test_dce_knows_fmac_reads_its_destination():
    code = ["v_lshlrev_b32_e32 v2, 2, v1", "v_mov_b32_e32 v3, 0",
            "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
            "global_load_dword v8, v[4:5], off", "s_waitcnt vmcnt(0)",
            "v_mov_b32_e32 v9, 1.0", "v_fmac_f32_e32 v9, v8, v8",
            "global_store_dword v[6:7], v9, off"]
    edit, ctx = _run("dce", _inject(code))
    assert isinstance(edit, Rejected) and "no dce rewrite" in ctx.reasons[-1]


def test_cse_reuses_the_first_address_and_renames_its_reader():
    code = ["v_lshlrev_b32_e32 v2, 2, v1", "v_mov_b32_e32 v3, 0",
            "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[10:11], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
            "global_load_dword v8, v[10:11], off", "s_waitcnt vmcnt(0)",
            "global_store_dword v[6:7], v8, off"]
    inject = _inject(code)
    edit, _ = _run("cse", inject)
    assert edit.lines == ("v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
                          "global_load_dword v8, v[4:5], off")
    assert (edit.start, edit.end) == (15, 18)
    assert _equal(inject, edit).equal


def test_cse_refuses_when_the_first_result_is_overwritten():
    code = ["v_lshlrev_b32_e32 v2, 2, v1", "v_mov_b32_e32 v3, 0",
            "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]",
            "v_lshl_add_u64 v[10:11], s[4:5], 0, v[2:3]",
            "v_not_b32_e32 v4, v2",
            "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
            "global_load_dword v8, v[10:11], off", "s_waitcnt vmcnt(0)",
            "global_store_dword v[6:7], v8, off"]
    edit, _ = _run("cse", _inject(code))
    assert isinstance(edit, Rejected)


def test_nop_rule_drops_padding_no_hazard_needs():
    ctx = context("asm_copy", 0)
    edit = get_operator("peephole", rules=("nop",)).mutate(Individual(), ctx)
    assert (edit.start, edit.end, edit.lines) == (9, 10, ())      # s_nop 1 before saveexec
    assert _equal(edit).equal


def test_nop_rule_keeps_padding_a_hazard_needs():
    # tri_softmax pads every DPP read of a fresh VALU result with s_nop 1
    ctx = context("tri_softmax", 0, windows=[("tri_softmax", 96, 124)])
    assert isinstance(get_operator("peephole", rules=("nop",)).mutate(Individual(), ctx), Rejected)


def test_bad_rule_names_are_errors():
    with pytest.raises(Exception, match="rules"):
        get_operator("peephole", rules=("fold_everything",))
