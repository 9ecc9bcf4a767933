"""Verify at one size, time at another: the candidate is also checked where it is timed."""
import hashlib

from asmevo.edits import Edit
from asmevo.prove.z3env import available
from asmevo.verify.evaluate import EvalContext, evaluate_candidate, k0_state
from tests.conftest import KERNELS

# vector_add: instruction 6 is the bound check `v_cmp_gt_i32_e32 vcc, s4, v0` (i < n).
# Clamping n to 4000 first changes nothing at size small (N = 4000) and leaves
# c[4000:4096] unwritten at the default size (N = 4096).
CLAMP = Edit("vector_add", 6, 7, ("s_min_i32 s4, s4, 0xfa0", "v_cmp_gt_i32_e32 vcc, s4, v0"))


def _ctx(**kw):
    return EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", seeds=(0,),
                       runs=1, **kw)


def test_a_bug_that_shows_only_at_the_timing_size_is_caught_there():
    """With one launch size checked (family=False) only the timing size shows the bug to
    the launches; the prover sees it at small (its own tests: tests/prove)."""
    assert evaluate_candidate(_ctx(timing="none", family=False, proof="off"),
                              (CLAMP,)).verdict.equal
    with_prover = evaluate_candidate(_ctx(timing="none", family=False), (CLAMP,)).verdict
    assert with_prover.status == ("refuted" if available() else "equal")
    v = evaluate_candidate(_ctx(timing="none", timing_size="default", family=False,
                                proof="off"),
                           (CLAMP,)).verdict
    assert v.status == "mismatch" and v.reason.startswith("at size default: ")
    assert v.details["size"] == "default" and v.details["index"] == 4000
    assert v.details["never_written"]


def test_the_launch_family_catches_it_without_a_timing_size():
    """vector_add's family reaches n above 4000: the clamp is caught at size small."""
    v = evaluate_candidate(_ctx(timing="none"), (CLAMP,)).verdict
    assert v.status == "mismatch" and v.details["never_written"]
    assert v.details["params"]["N"] > 4000 and v.reason.startswith(f"at {v.details['member']}")


def test_an_equal_candidate_is_timed_at_the_timing_size():
    sound = Edit("vector_add", 16, 18, ("global_load_dword v7, v[2:3], off",
                                        "global_load_dword v6, v[4:5], off"))
    small = evaluate_candidate(_ctx(), (sound,))
    both = evaluate_candidate(_ctx(timing_size="default"), (sound,))
    assert small.verdict.equal and both.verdict.equal
    assert "1 input set at size default" in both.verdict.reason
    ts = k0_state(_ctx(timing_size="default")).timing_inputs()
    assert ts.spec.size == "default" and ts.values["a"].size == 4096
    k0 = k0_state(_ctx(timing_size="default")).timing_reference().results["seed0"]
    assert k0.buffers["c"].data.size == 4096
    cands = {small.code_sha256, both.code_sha256}
    assert len(cands) == 1


def test_keys_of_contexts_without_a_timing_size_are_unchanged():
    """Archives written before timing_size existed keep their evaluation keys."""
    ctx = _ctx()
    assert "timing_size" not in ctx.identity() and ctx.identity() == repr(ctx)
    assert ctx.key == hashlib.sha256(repr(ctx).encode()).hexdigest()[:16]
    assert _ctx(timing_size="small").key == ctx.key           # the same size: no change
    assert _ctx(timing_size="default").key != ctx.key
