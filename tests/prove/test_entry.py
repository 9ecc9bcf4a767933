"""A region whose difference is only in lanes EXEC leaves out, refuted from a launch's
first state along the kernel's path to it (asmevo.prove.entry); a sound edit that relies
on what the code before its region computes is not."""
from __future__ import annotations

import sys

import pytest

from asmevo.edits import Edit
from asmevo.prove.entry import entry_window, refute_from_entry
from asmevo.prove.regions import diff_regions
from asmevo.prove.validate import context_for, prove_programs
from asmevo.verify.evaluate import EvalContext, k0_state
from tests.conftest import KERNELS, ROOT


def _ctx(kernel: str) -> EvalContext:
    return EvalContext(spec_path=str(KERNELS / kernel), size="small", timing="none")


def _region(ctx, edits):
    st = k0_state(ctx)
    cand = st.target.apply(st.program, tuple(edits))
    fa, fb = st.program.function(st.spec.kernel), cand.function(st.spec.kernel)
    regs = diff_regions(fa, fb)
    assert len(regs) == 1
    return st, cand, fa, fb, regs[0]


# tri_softmax: -FLT_MAX for the -inf the out-of-row lanes load shows in the wave's max
# (LDS at the first barrier) where no column is in the row; aiter_bwd_dq_convert: the LDS
# slot read before its first write, added in, shows in LDS at the barrier after the write
# (the barrier before it is crossed: nothing stores before it)
@pytest.mark.parametrize("kernel, cls", [("tri_softmax", "neg_inf_constant"),
                                         ("aiter_bwd_dq_convert", "uninit_lds")])
def test_a_lanes_only_difference_is_refuted_from_a_launchs_first_state(kernel, cls):
    sys.path.insert(0, str(ROOT / "experiments"))
    from prove_wrong import prove_wrong
    from tests.verify.wrong import build_wrong
    ctx = _ctx(kernel)
    got = prove_wrong(ctx, build_wrong(ctx, cls))
    assert (got["kind"], got["status"], got["replayed"]) == ("straight-line", "refuted", True), \
        got["reason"]
    assert "from a launch's first state" in got["reason"] and "LDS" in got["reason"]
    entry = got["counterexample"]["entry"]
    assert entry["exec"] == "0xffffffffffffffff", entry       # a whole wave, lanes 0..63
    assert all(entry[f"v0[{i}]"] == hex(i) for i in range(64) if f"v0[{i}]" in entry)


def test_a_sound_edit_relying_on_the_code_before_its_region_is_not_refuted():
    """tri_softmax: -inf computed from v4 (0x80000000 since #72) instead of loaded as a
    literal. The region alone differs (any v4), only in a register live outside EXEC's
    lanes; from a launch's first state the path to it sets v4, so nothing differs."""
    ctx = _ctx("tri_softmax")
    st = k0_state(ctx)
    fn = st.program.function(st.spec.kernel)
    assert fn.instructions[72].text == "v_bfrev_b32_e32 v4, 1"
    assert fn.instructions[80].text == "v_mov_b32_e32 v5, 0xff800000"
    edits = [Edit(fn.name, 80, 81, ("v_ashrrev_i32_e32 v5, 8, v4",))]
    st, cand, fa, fb, reg = _region(ctx, edits)
    kd = st.program.source.kernel(st.spec.kernel).descriptor
    assert entry_window(fa, fb, reg) is not None
    assert refute_from_entry(context_for(st.program, st.spec.kernel, cand), kd,
                             st.spec.block, fa, fb, reg, 5000) is None
    assert prove_programs(st.program, cand, st.spec.kernel,
                          block=st.spec.block).status != "refuted"
    # the same edit with the wrong shift is refuted from there
    wrong = [Edit(fn.name, 80, 81, ("v_ashrrev_i32_e32 v5, 9, v4",))]
    st, cand, fa, fb, reg = _region(ctx, wrong)
    got = refute_from_entry(context_for(st.program, st.spec.kernel, cand), kd, st.spec.block,
                            fa, fb, reg, 5000)
    assert got is not None and got.status == "refuted", got


def test_no_question_where_the_path_to_the_region_forks():
    """tri_decode_attention's uninit_lds region is in a loop's block: the path from the
    entry forks before it (and crosses barriers after stores), so there is no question."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from tests.verify.wrong import build_wrong
    ctx = _ctx("tri_decode_attention")
    _, _, fa, fb, reg = _region(ctx, build_wrong(ctx, "uninit_lds").edits)
    assert entry_window(fa, fb, reg) is None


def test_a_lanes_only_model_is_asked_again_in_execs_lanes():
    """tri_decode_attention: the LDS slot read before its first write (#250, in a loop
    whose path from the entry forks: no launch-state question). The solver's first model
    differs only in lanes EXEC leaves out; asked again with the VGPRs compared in EXEC's
    lanes, v24 differs in an active lane, replayed on the emulator."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from prove_wrong import prove_wrong
    from tests.verify.wrong import build_wrong
    ctx = _ctx("tri_decode_attention")
    got = prove_wrong(ctx, build_wrong(ctx, "uninit_lds"))
    assert (got["kind"], got["status"], got["replayed"]) == ("straight-line", "refuted", True), \
        got["reason"]
    assert "in EXEC's lanes" in got["reason"]
