"""Issue 22's fourth round: work moved or remembered gives what computing it in place gives.

The modeled timing computed in the forked worker beside the differential, the stages
up to build remembered between the engine's build phase and the evaluation, the hazard
check remembered by content, and a pool's workers set up as they start."""
from __future__ import annotations

from dataclasses import replace

from asmevo.edits import Edit
from asmevo.timing import model as emu_timing
from asmevo.verify import evaluate as ev
from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate, k0_state
from tests.conftest import KERNELS

SOFTMAX = KERNELS / "softmax"
CTX = EvalContext(spec_path=str(SOFTMAX), size="small")


def _swap_edit():
    st = k0_state(CTX)
    ins = st.program.function(st.spec.kernel).instructions
    return (Edit(st.spec.kernel, 44, 46, (ins[45].text, ins[44].text)),)


def _fresh_caches():
    emu_timing._CACHE.clear()
    ev._BUILT.clear()


def test_timing_modeled_in_the_worker_is_the_one_modeled_here():
    edits = _swap_edit()
    _fresh_caches()
    here = evaluate_candidate(replace(CTX, isolate=False), edits)
    _fresh_caches()
    data, _ = build_candidate(CTX, edits)
    ts = ev.timing_state(CTX)
    key = emu_timing._key(data, ts.spec, ts.values, True)
    verdict = ev._differential_verdict(CTX, data)
    assert verdict.equal
    assert key in emu_timing._CACHE          # the worker's model, kept here
    there = evaluate_candidate(CTX, edits)
    assert here.verdict.status == there.verdict.status == "equal"
    assert there.timing == here.timing
    assert there.verdict.details["hot_windows"] == here.verdict.details["hot_windows"]
    assert there.verdict.details["line_profile"] == here.verdict.details["line_profile"]


def test_a_worker_that_cannot_model_stores_nothing():
    class Refusing:
        def call(self, fn, *args, timeout, counted=True):
            from asmevo.verdict import Verdict
            assert counted is False
            return Verdict("crash", "evaluating process died (exit code -9)")

    _fresh_caches()
    data, _ = build_candidate(CTX, _swap_edit())
    ev._model_beside(Refusing(), CTX, data)
    assert not emu_timing._CACHE


def test_evaluation_after_the_build_phase_equals_one_from_scratch():
    edits = _swap_edit()
    _fresh_caches()
    scratch = evaluate_candidate(CTX, edits)
    _fresh_caches()
    build_candidate(CTX, edits)
    assert (CTX, edits) in ev._BUILT
    after = evaluate_candidate(CTX, edits)
    assert (after.code_sha256, after.verdict, after.timing) == \
        (scratch.code_sha256, scratch.verdict, scratch.timing)


def test_a_refused_build_is_refused_alike_when_remembered():
    st = k0_state(CTX)
    edits = (Edit(st.spec.kernel, 28, 29, ()),)       # drops a waitcnt: the gate refuses
    _fresh_caches()
    scratch = evaluate_candidate(CTX, edits)
    data, verdict = build_candidate(CTX, edits)
    again = evaluate_candidate(CTX, edits)
    assert data is None and verdict.status == "waitcnt"
    assert (again.code_sha256, again.verdict) == (scratch.code_sha256, scratch.verdict)


def test_check_hazards_remembered_by_content_returns_its_own_list():
    from asmevo.targets.amdgpu.analysis import hazards
    st = k0_state(CTX)
    fn = st.program.function(st.spec.kernel)
    target = st.code_object.target
    hazards._CHECKED.clear()
    first = hazards.check_hazards(fn, target)
    first.append("not a problem")
    second = hazards.check_hazards(fn, target)
    assert second == hazards._check_hazards(fn, hazards.target_family(target), None)
    assert "not a problem" not in second


def test_warm_sets_up_k0_and_the_forked_worker():
    from asmevo.verify.isolate import worker
    ev._state.cache_clear()
    w = worker("fork", max_calls=ev.FORKED_CALLS)
    w.close()
    w.warm.clear()
    ev.warm(CTX)
    st = k0_state(CTX)
    assert st.k0_time is not None               # K0's modeled cycles
    assert CTX.key in w.warm and w._proc is not None and w._proc.is_alive()


def test_warm_leaves_errors_to_the_first_candidate(tmp_path):
    bad = EvalContext(spec_path=str(tmp_path / "nowhere"), size="small")
    ev.warm(bad)                                # no exception here


def test_the_forked_worker_keeps_what_it_inherits_out_of_collections():
    """A forked worker freezes what it starts with (its parent's K0 state): a later
    collection neither walks those objects nor writes to the pages it shares with its
    parent; what it creates afterwards is collected as usual."""
    import gc
    from asmevo.verify.isolate import worker
    w = worker("fork", max_calls=ev.FORKED_CALLS)
    frozen = w.call(gc.get_freeze_count, timeout=30)
    assert isinstance(frozen, int) and frozen > 1000
    assert w.call(gc.collect, timeout=30) >= 0
    assert w.call(gc.get_freeze_count, timeout=30) == frozen


def test_verdict_json_is_asdicts_copy():
    """Verdict.to_json gives what dataclasses.asdict gave (nested dicts, lists, tuples,
    a namedtuple, numpy scalars), as a copy: changing it leaves the verdict alone."""
    import json
    from collections import namedtuple
    from dataclasses import asdict

    import numpy as np

    from asmevo.verdict import Verdict
    pair = namedtuple("pair", "a b")
    v = Verdict("equal", "bit-equal", {"sets": ["seed0", "special"], "windows": [
        ("k", 3, 9, 0.5), ("k", 12, 14, 0.25)], "nested": {"x": [1, {"y": (2, 3)}]},
        "p": pair(1, [2]), "n": np.float64(1.5), "flag": True, "none": None})
    got = v.to_json()
    assert got == asdict(v) and json.dumps(got, default=float) == json.dumps(
        asdict(v), default=float)
    assert type(got["details"]["windows"][0]) is tuple and type(got["details"]["p"]) is pair
    got["details"]["nested"]["x"][1]["y"] = None
    got["details"]["sets"].append("more")
    assert v.details["nested"]["x"][1]["y"] == (2, 3) and v.details["sets"] == ["seed0",
                                                                                 "special"]
