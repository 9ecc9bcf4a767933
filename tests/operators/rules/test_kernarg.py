"""``kernarg_hoist`` on hand-written guarded kernels: the exact rewrite, bit-equal runs
(also when the guard skips the block on every lane), each refusal; then through the
verifier on naive-set kernels it applies to."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.flowkit import Individual, context, program, same_results, texts
from tests.operators.rules.helpers import KERNELS

NAIVE = KERNELS.parent / "kernels_naive"

# the first-port elementwise shape: the entry loads y's pointer, waits, guards on the lane
# id; the guarded block loads x's pointer over the kernarg pointer itself, waits again
GUARDED = """
  s_load_dwordx2 s[4:5], s[0:1], 0x8
  v_lshlrev_b32_e32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  v_cmp_gt_u32_e32 vcc, {bound}, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_execz .Lend
{guarded}
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[0:1]
  s_waitcnt vmcnt(0)
  v_add_f32_e32 v2, 1.0, v2
  global_store_dword v1, v2, s[4:5]
.Lend:
"""
LOAD = "  s_load_dwordx2 s[0:1], s[0:1], 0x0"
INPUTS = {"x": np.linspace(-3, 5, 64, dtype=np.float32), "y": np.zeros(64, np.float32)}


def _hoist(prog, seed=0):
    ctx = context(prog, seed)
    return get_operator("kernarg_hoist").mutate(Individual(), ctx), ctx


@pytest.mark.parametrize("bound", [40, 64, 0])     # some lanes, every lane, no lane
def test_hoists_the_guarded_pointer_load_and_drops_its_wait(bound):
    prog = program(GUARDED.format(bound=bound, guarded=LOAD))
    edits, ctx = _hoist(prog)
    assert not isinstance(edits, Rejected), ctx.reasons
    assert texts(apply_edits(prog, edits)) == [
        "s_load_dwordx2 s[4:5], s[0:1], 0x8",
        "v_lshlrev_b32_e32 v1, 2, v0",
        "s_load_dwordx2 s[6:7], s[0:1], 0x0",       # fresh pair, same address
        "s_waitcnt lgkmcnt(0)",
        f"v_cmp_gt_u32_e32 vcc, {bound}, v0",
        "s_and_saveexec_b64 s[2:3], vcc",
        texts(prog)[5],                             # s_cbranch_execz (label as recovered)
        "s_mov_b64 s[0:1], s[6:7]",                 # the load's value, no wait
        "global_load_dword v2, v1, s[0:1]",
        "s_waitcnt vmcnt(0)",
        "v_add_f32_e32 v2, 1.0, v2",
        "global_store_dword v1, v2, s[4:5]",
        "s_endpgm"]
    same_results(prog, edits, INPUTS)


def test_a_single_dword_and_a_quad_load_each_get_fresh_aligned_registers():
    guarded = "  s_load_dword s9, s[0:1], 0x0\n  s_load_dwordx4 s[12:15], s[0:1], 0x0"
    body = GUARDED.format(bound=40, guarded=guarded).replace(
        "global_load_dword v2, v1, s[0:1]", "global_load_dword v2, v1, s[12:13]").replace(
        "v_add_f32_e32 v2, 1.0, v2",         # + (s9 - s12) = 0 when both copies are right
        "v_mov_b32_e32 v3, s9\n  v_subrev_u32_e32 v3, s12, v3\n  v_add_u32_e32 v2, v2, v3"
    ).replace("global_store_dword v1, v2, s[4:5]", "global_store_dword v1, v2, s[14:15]")
    prog = program(body)
    edits, ctx = _hoist(prog)
    assert not isinstance(edits, Rejected), ctx.reasons
    new = texts(apply_edits(prog, edits))
    assert new[2:4] == ["s_load_dword s6, s[0:1], 0x0", "s_load_dwordx4 s[16:19], s[0:1], 0x0"]
    assert new[8:11] == ["s_mov_b32 s9, s6", "s_mov_b64 s[12:13], s[16:17]",
                         "s_mov_b64 s[14:15], s[18:19]"]
    same_results(prog, edits, INPUTS)


def test_keeps_the_wait_when_another_lgkm_load_is_outstanding():
    guarded = "  s_load_dword s9, s[4:5], 0x0\n" + LOAD       # a load through y: not kernarg
    prog = program(GUARDED.format(bound=40, guarded=guarded).replace(
        "v_add_f32_e32 v2, 1.0, v2", "v_add_f32_e32 v2, s9, v2"))
    edits, ctx = _hoist(prog)
    assert not isinstance(edits, Rejected), ctx.reasons
    new = texts(apply_edits(prog, edits))
    assert new[7:10] == ["s_load_dword s9, s[4:5], 0x0", "s_mov_b64 s[0:1], s[6:7]",
                         "s_waitcnt lgkmcnt(0)"]
    same_results(prog, edits, INPUTS)


@pytest.mark.parametrize("body, why", [
    # the kernarg pointer is overwritten before the load
    (GUARDED.format(bound=40, guarded="  s_mov_b64 s[0:1], s[4:5]\n" + LOAD),
     "is written before it"),
    # past the 16-byte kernarg segment of a two-buffer kernel
    (GUARDED.format(bound=40, guarded="  s_load_dwordx2 s[0:1], s[0:1], 0x10"),
     "reads past the kernarg segment"),
    # reads the destination before its wait: a race the copy would define
    (GUARDED.format(bound=40, guarded=LOAD + "\n  s_mov_b32 s9, s1"), "before its wait"),
    # the entry block waits for nothing
    (GUARDED.format(bound=40, guarded=LOAD).replace("  s_waitcnt lgkmcnt(0)\n  v_cmp",
                                                    "  v_cmp", 1)
     .replace("s_load_dwordx2 s[4:5], s[0:1], 0x8", "s_mov_b64 s[4:5], s[0:1]"),
     "has no s_waitcnt lgkmcnt(0)"),
    # not through the kernarg pointer
    (GUARDED.format(bound=40, guarded="  s_load_dwordx2 s[8:9], s[4:5], 0x0"),
     "not a plain load from the kernarg pointer"),
])
def test_refusals_name_their_reason(body, why):
    prog = program(body)
    edits, ctx = _hoist(prog)
    assert isinstance(edits, Rejected)
    assert why in ctx.reasons[-1], ctx.reasons


@pytest.mark.parametrize("name", ["elu", "hinge_loss", "residual_add_clamp"])
def test_naive_hoists_are_bit_equal(name):
    from tests.operators.rules.flowkit import corpus_context
    ctx = corpus_context(NAIVE, name, 0)
    edits = get_operator("kernarg_hoist").mutate(Individual(), ctx)
    assert not isinstance(edits, Rejected), ctx.reasons
    assert "its wait deleted" in edits[0].note
    vctx = EvalContext(spec_path=str(Path(NAIVE) / name), size="small", timing="none",
                       seeds=(0, 1), runs=1, isolate=False)
    assert evaluate_candidate(vctx, tuple(edits)).verdict.equal
