"""Issue 39's classes of wrong candidates (``tests/verify/wrong/``), one kernel each:
the candidate is built the way a buggy operator would build it, shown wrong by its
witness (K0 and it run directly on the emulator at a family member, a workgroup
order, an overlap of buffers, an input layout), then rejected by the verifier with
the kind of verdict that class needs: most of them equal to K0 at the size under
check, so only the launches issue 39 added can catch them."""
from __future__ import annotations

import numpy as np

from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate
from tests.conftest import KERNELS
from tests.verify import wrong as W
from tests.verify.wrong.witness import small_probe

NAIVE = KERNELS.parent / "kernels_naive"


def _ctx(folder):
    return EvalContext(spec_path=str(folder), size="small", timing="none")


def _built(ctx, cls):
    w = W.build_wrong(ctx, cls)
    assert w is not None, f"{cls} does not apply to {ctx.spec_path}"
    data, refused = build_candidate(ctx, w.edits)
    assert data is not None, refused
    return w, data


def _rejected(ctx, cls, *, equal_at_small: bool = True):
    """The class's candidate: built, witnessed wrong, equal to K0 at the size under check
    (seed 0) where asked, and rejected by the verifier."""
    w, data = _built(ctx, cls)
    why = W.witnessed(ctx, w, data)
    assert why, f"{cls}: the witness finds {w.note} equal to K0"
    at_small = W.witnessed(ctx, W.Wrong(cls, w.edits, w.note, "launches",
                                        probes=(small_probe(),)), data)
    if equal_at_small:
        assert at_small is None, f"{cls}: {w.note} differs at the size under check: {at_small}"
    v = evaluate_candidate(ctx, w.edits).verdict
    assert not v.equal, f"{cls} ({w.note}, {why}) was accepted: {v.reason}"
    return w, why, v


def test_remainder_skipped_by_a_broken_unroll():
    """sum_rows' column loop unrolled by the project's own operator, its remainder broken:
    right at the size under check's trip count, wrong at a family member's."""
    w, why, v = _rejected(_ctx(NAIVE / "sum_rows"), "remainder")
    assert "unroll" in w.note and "remainder" in w.note
    assert v.status in ("mismatch", "fault") and "member" in v.details, v.reason


def test_partial_tile_bound_made_always_true():
    """matmul_tiled at 64 x 64 has only whole 16 x 16 tiles; with M's bound compare always
    true, a member with a partial last tile reads past A."""
    w, why, v = _rejected(_ctx(KERNELS / "matmul_tiled"), "partial_tile")
    assert "0x7fffffff" in w.note
    assert v.status == "fault" and "member" in v.details, v.reason


def test_grid_dimension_read_as_zero():
    """aiter_bwd_odo's grid has one workgroup in x at the size under check; its
    workgroup id x read as 0 is wrong wherever there are two."""
    w, why, v = _rejected(_ctx(KERNELS / "aiter_bwd_odo"), "grid_dimension")
    assert "workgroup id x" in w.note and "2 workgroups in grid dimension x" in why
    assert v.status in ("mismatch", "fault") and "member" in v.details, v.reason


def test_scalar_path_fixed_at_the_size_under_check():
    """The naive matmul's M (no domain: no input set at the size under check moves it)
    compared as the literal 70: only a member with another M shows it."""
    w, why, v = _rejected(_ctx(NAIVE / "matmul"), "scalar_path")
    assert "follows M" in w.note
    assert v.status in ("mismatch", "fault") and v.details["params"]["M"] != 70, v.reason


def test_alias_a_pipeline_that_ignores_aliasing():
    """The project's ``pipeline`` with its alias refusal taken out, on the naive
    instancenorm_inplace's output loop (no __restrict__: callers run it in place): the
    next group's loads of x pass this group's stores of y, which y laid one element into
    x makes visible (K0 gives one result in every schedule there: in the contract)."""
    w, why, v = _rejected(_ctx(NAIVE / "instancenorm_inplace"), "alias")
    assert "laid" in why and "into x" in why
    assert v.status == "mismatch" and "overlap y=x+4B" in v.reason, v.reason


def test_no_overlap_where_the_source_says_restrict():
    """instancenorm declares __restrict__ (noalias in its spec): the same broken pipeline
    is not wrong there, and no overlapping launch is made."""
    from asmevo.verify.evaluate import k0_state
    st = k0_state(_ctx(NAIVE / "instancenorm"))
    assert st.coverage.summary()["aliases"] == []


def test_workgroup_order_a_store_into_the_partner_slot():
    """vector_add: each odd workgroup first stores ~value into workgroup - 1's slot; in
    lockstep the partner's own store lands after it, one workgroup at a time in ascending
    order it does not."""
    w, why, v = _rejected(_ctx(KERNELS / "vector_add"), "workgroup_order")
    assert "ascending" in why
    # caught one workgroup at a time, or already where the assumed slot width (256
    # elements) is not the launch's block: the store then lands outside the output
    assert ("one at a time" in v.reason and v.status == "mismatch") or \
        (v.status == "fault" and "member" in v.details), v.reason


def test_same_address_lanes_is_its_own_verdict():
    """The witness of this class is the store itself: lanes 2k and 2k+1 store different
    values to one address (the emulator's last lane wins, so the bytes are K0's); the
    ISA leaves the winner unspecified, and K0 never does it."""
    w, why, v = _rejected(_ctx(KERNELS / "vector_add"), "same_address_lanes")
    assert "lanes of one wave store different values" in why
    assert v.status == "unspecified", v.reason


def test_special_value_layout_two_neighbouring_nans():
    """0 stored where this lane's and the previous lane's values are both NaN: the seeded
    sets never hold NaN, the special sets in runs do."""
    w, why, v = _rejected(_ctx(KERNELS / "vector_add"), "special_layout")
    assert "NaN" in why
    assert v.status == "mismatch" and v.details["input_set"].startswith("special"), v.reason


def test_index_overflow_no_family_launch_reaches():
    """The naive matmul's row * K multiply narrowed to 24 bits: exact while both
    operands are below 2^24, which no member of its family (M <= 512, K <= 128) breaks,
    so the witness finds it equal at the family's far ends (the benchmark lists it as
    unreachable); the narrowing itself is wrong once an operand reaches 2^24."""
    from tests.emu.asmdsl import run_asm
    ctx = _ctx(NAIVE / "matmul")
    w, data = _built(ctx, "index_overflow")
    assert "v_mul_u32_u24" in w.note
    assert any("far end" in p.label for p in w.probes)
    assert W.witnessed(ctx, w, data) is None
    big = np.full(64, (1 << 24) + 3, np.uint32)
    lo = run_asm("v_mul_lo_u32 v2, v0, v1", v={0: big, 1: np.full(64, 3, np.uint32)})
    narrow = run_asm("v_mul_u32_u24_e64 v2, v0, v1", v={0: big, 1: np.full(64, 3, np.uint32)})
    assert int(lo.v(2)[0]) == (3 * ((1 << 24) + 3)) & 0xFFFFFFFF != int(narrow.v(2)[0]) == 9
