"""``waitcnt_relax``: hand-written waits with their exact weakest form, and real code."""
from __future__ import annotations

import pytest

from asmevo.targets.amdgpu.analysis.gate import static_gate
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.waitcnt_relax import relaxed, restore_pinned, sunk
from tests.operators.rules.helpers import KERNELS, Individual, context, kernel

LOADS = ["global_load_dword v1, v[2:3], off", "global_load_dword v5, v[6:7], off"]


def test_relax_weakens_a_wait_whose_uses_need_only_the_older_load():
    texts = LOADS + ["s_waitcnt vmcnt(0)", "v_add_f32_e32 v4, v1, v1",
                     "s_waitcnt vmcnt(0)", "v_add_f32_e32 v8, v5, v5"]
    assert relaxed(texts, None, None) == LOADS + [
        "s_waitcnt vmcnt(1)", "v_add_f32_e32 v4, v1, v1",
        "s_waitcnt vmcnt(0)", "v_add_f32_e32 v8, v5, v5"]


def test_sink_splits_one_wait_before_the_first_of_two_uses():
    texts = LOADS + ["s_waitcnt vmcnt(0)", "v_add_f32_e32 v4, v1, v1",
                     "v_add_f32_e32 v8, v5, v5"]
    assert relaxed(texts, None, None) == texts          # in place, vmcnt(0) is needed
    assert sunk(texts, None, None) == LOADS + [
        "s_waitcnt vmcnt(1)", "v_add_f32_e32 v4, v1, v1",
        "s_waitcnt vmcnt(0)", "v_add_f32_e32 v8, v5, v5"]


def test_sink_moves_a_wait_below_independent_work():
    texts = ["s_load_dword s4, s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
             "v_mov_b32_e32 v1, 0", "v_add_u32_e32 v2, s4, v0"]
    assert sunk(texts, None, None) == ["s_load_dword s4, s[0:1], 0x0",
                                       "v_mov_b32_e32 v1, 0", "s_waitcnt lgkmcnt(0)",
                                       "v_add_u32_e32 v2, s4, v0"]


def test_a_wait_that_is_needed_stays():
    texts = LOADS + ["s_waitcnt vmcnt(0)", "v_add_f32_e32 v4, v1, v5"]
    assert relaxed(texts, None, None) == texts
    assert sunk(texts, None, None) == texts


def test_waits_before_a_barrier_are_kept_verbatim():
    texts = ["global_store_dword v[0:1], v2, off", "ds_write_b32 v1, v2",
             "s_waitcnt vmcnt(0) lgkmcnt(0)", "s_barrier", "v_mov_b32_e32 v3, 0"]
    assert relaxed(texts, None, None) == texts
    assert sunk(texts, None, None) == texts
    # what restore_pinned puts back: the relaxed lgkmcnt(0) becomes the original again
    assert restore_pinned(texts, texts[:2] + ["s_waitcnt lgkmcnt(0)"] + texts[3:]) == texts


def test_operator_drops_the_drain_before_s_endpgm():
    ctx = context("asm_copy", 0)
    edit = get_operator("waitcnt_relax").mutate(Individual(), ctx)
    assert (edit.start, edit.end, edit.lines) == (24, 25, ())
    assert "vmcnt(0) -> -" in edit.note
    _, program = kernel("asm_copy")
    assert static_gate(apply_edits(program, (edit,))) is None
    ectx = EvalContext(spec_path=str(KERNELS / "asm_copy"), size="small", timing="none",
                       seeds=(0,), runs=1, isolate=False)
    assert evaluate_candidate(ectx, (edit,)).verdict.equal


def test_operator_says_why_when_every_wait_is_needed():
    ctx = context("vector_add", 0)
    assert isinstance(get_operator("waitcnt_relax").mutate(Individual(), ctx), Rejected)
    assert "already the weakest" in ctx.reasons[-1]


def test_unknown_modes_are_errors():
    with pytest.raises(Exception, match="modes"):
        get_operator("waitcnt_relax", modes=("hoist",))
