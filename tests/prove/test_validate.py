"""A candidate against K0: straight-line regions, unrolled loops, the pipeline's prove
stage (coverage, refuted, unproved, no solver), and the wrong candidates of
tests/verify/wrong.py refuted with counterexamples the emulator reproduces."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from asmevo.edits import Edit, as_edits
from asmevo.prove import stage, z3env
from asmevo.prove.regions import NotStraight, diff_regions
from asmevo.prove.validate import prove_programs
from asmevo.verdict import STATUSES, Verdict, coverage_of
from asmevo.verify.evaluate import EvalContext, k0_state, setting
from asmevo.verify.pipeline import CANDIDATE, Candidate, run
from tests.conftest import KERNELS, ROOT

SOFTMAX = EvalContext(spec_path=str(KERNELS / "softmax"), size="small")
DATA = Path(__file__).parent / "data"
NAIVE = EvalContext(spec_path=str(ROOT / "experiments" / "kernels_naive" / "max_rows"),
                    size="small", timing="none")


def _k0(ctx):
    st = k0_state(ctx)
    return st, st.program.function(st.spec.kernel)


def _apply(ctx, edits):
    st = k0_state(ctx)
    return st.target.apply(st.program, tuple(edits))


def test_a_swap_inside_a_block_is_one_straight_line_region():
    st, fn = _k0(SOFTMAX)
    ins = fn.instructions
    cand = _apply(SOFTMAX, [Edit(fn.name, 44, 46, (ins[45].text, ins[44].text))])
    regs = diff_regions(fn, cand.function(fn.name))
    assert [(r.a, r.b) for r in regs] == [((44, 46), (44, 46))]
    p = prove_programs(st.program, cand, fn.name)
    assert (p.status, p.kind, p.coverage) == ("proved", "straight-line", "proved")


def test_a_changed_branch_is_not_straight_line():
    st, fn = _k0(SOFTMAX)
    k = next(i for i, x in enumerate(fn.instructions) if x.mnemonic == "s_cbranch_execz")
    flip = fn.instructions[k].text.replace("execz", "execnz")
    cand = _apply(SOFTMAX, [Edit(fn.name, k, k + 1, (flip,))])
    with pytest.raises(NotStraight):
        diff_regions(fn, cand.function(fn.name))
    assert prove_programs(st.program, cand, fn.name).status == "unknown"


def _unrolled(seed: int):
    sys.path.insert(0, str(ROOT / "experiments"))
    from bench_operators import Programs
    from asmevo.engine.individual import Individual
    from asmevo.operator import OperatorContext, Rejected, get_operator
    st = k0_state(NAIVE)
    octx = OperatorContext(k0=st.program, kernel=st.spec.kernel, rng=random.Random(seed),
                           program_of=Programs(st.program, st.target))
    e = get_operator("unroll").mutate(Individual("k0"), octx)
    assert not isinstance(e, Rejected), e
    return st, as_edits(e)


def test_an_unrolled_loop_is_proved_for_every_trip_count():
    st, edits = _unrolled(0)
    p = prove_programs(st.program, _apply(NAIVE, edits), st.spec.kernel)
    assert (p.status, p.kind) == ("proved", "loop"), p.reason
    assert {r["obligation"] for r in p.regions} >= {"guard keeps K0's state"}


def test_an_unrolled_loop_whose_guard_lets_one_iteration_too_many_run_is_not_proved():
    st, edits = _unrolled(0)
    e = edits[0]
    lines = list(e.lines)
    assert lines[0].startswith("s_cmp_gt_u32 ")
    head, k = lines[0].rsplit(" ", 1)
    lines[0] = f"{head} {int(k, 0) - 1}"        # one trip short of the group's F copies
    bad = Edit(e.function, e.start, e.end, tuple(lines), e.operator)
    p = prove_programs(st.program, _apply(NAIVE, (bad,)), st.spec.kernel)
    assert p.status != "proved"
    assert any("exit test" in r["reason"] for r in p.regions if r["status"] != "proved")


def test_a_change_in_an_unrolled_loops_remainder_is_read_from_the_folded_candidate():
    # a search's chain on conv1d: schedule swapped two instructions of the loop body,
    # then unroll copied that body into the group and the remainder. The regions outside
    # the rewritten loop index the candidate with the loop folded back into K0's shape;
    # reading their texts from the unfolded candidate compared K0's body with the guard
    # and group, and this sound candidate was refuted (every launch equal)
    ctx = EvalContext(spec_path=str(KERNELS / "conv1d"), size="small", timing="none")
    st, fn = _k0(ctx)
    edits = [Edit.from_json(e) for e in json.loads((DATA / "conv1d_unroll_after_schedule.json")
                                                    .read_text())]
    p = prove_programs(st.program, _apply(ctx, edits), fn.name, timeout_ms=1000)
    assert p.kind == "loop" and p.status != "refuted", p.reason
    assert [(r["k0"], r["status"]) for r in p.regions if "k0" in r] == [([23, 25], "proved")]


def test_the_prove_stage_says_proved_or_tested():
    st, fn = _k0(SOFTMAX)
    ins = fn.instructions
    edits = (Edit(fn.name, 44, 46, (ins[45].text, ins[44].text)),)
    _, cand, verdict = run(setting(SOFTMAX), Candidate(edits), CANDIDATE, until="prove")
    assert verdict.equal and coverage_of(verdict.details) == "proved"
    assert verdict.details["proof"]["status"] == "proved"


def test_a_refuted_candidate_is_rejected_though_every_launch_was_equal():
    st, fn = _k0(SOFTMAX)
    # a dead register changes: equal on every launch, and proved (not live)
    k = 44
    edits = (Edit(fn.name, k, k, ("v_mov_b32_e32 v100, 0",)),)
    _, _, verdict = run(setting(SOFTMAX), Candidate(edits), CANDIDATE, until="prove")
    assert verdict.equal
    assert "refuted" in STATUSES and "unproved" in STATUSES
    refusal, details = stage.judge(st.program, _apply(SOFTMAX, edits), fn.name, "require")
    assert refusal is None and details["coverage"] == "proved"


def test_require_rejects_what_is_not_proved():
    st, fn = _k0(SOFTMAX)
    k = next(i for i, x in enumerate(fn.instructions) if x.mnemonic == "s_cbranch_execz")
    flip = fn.instructions[k].text.replace("execz", "execnz")
    cand = _apply(SOFTMAX, [Edit(fn.name, k, k + 1, (flip,))])
    refusal, details = stage.judge(st.program, cand, fn.name, "require")
    assert isinstance(refusal, Verdict) and refusal.status == "unproved"
    assert details["coverage"] == "tested"
    assert stage.judge(st.program, cand, fn.name, "on")[0] is None


def test_without_the_solver_verification_says_tested(monkeypatch):
    st, fn = _k0(SOFTMAX)
    monkeypatch.setattr(stage, "available", lambda: False)
    refusal, details = stage.judge(st.program, st.program, fn.name, "on")
    assert refusal is None and details["coverage"] == "tested"
    assert details["proof"]["status"] == "unavailable" and "z3" in details["proof"]["reason"]
    assert z3env.available()      # the test itself runs with it


@pytest.mark.parametrize("cls", ["canonicalize", "neg_inf_constant"])
def test_a_straight_line_wrong_candidate_is_refuted_and_replayed(cls):
    sys.path.insert(0, str(ROOT / "experiments"))
    from prove_wrong import prove_wrong
    from tests.verify.wrong import build_wrong
    w = build_wrong(SOFTMAX, cls)
    assert w is not None
    got = prove_wrong(SOFTMAX, w)
    assert (got["kind"], got["status"], got["replayed"]) == ("straight-line", "refuted", True), got


def test_a_refutations_counterexample_refutes_a_later_candidate_the_solver_leaves_open(
        monkeypatch, tmp_path):
    """The counterexample of one refutation is kept as an input set of K0's kernel: a
    later candidate whose region the solver does not decide is run from it on the
    emulator and refuted there; with no counterexample kept it stays unknown."""
    from asmevo.prove import cexstore, validate
    from asmevo.prove.obligation import Result
    from tests.verify.wrong import build_wrong
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path / "a"))
    st, fn = _k0(SOFTMAX)
    cand = _apply(SOFTMAX, build_wrong(SOFTMAX, "canonicalize").edits)
    first = prove_programs(st.program, cand, fn.name)
    assert first.status == "refuted" and first.counterexample["replayed"]
    kept = cexstore.load(cexstore.kernel_key(fn))
    assert len(kept) == 1 and kept[0]["at"] <= first.regions[0]["k0"][0]     # its block

    def undecided(ctx, w, timeout_ms=0):
        return Result("unknown", "the solver's time limit")
    monkeypatch.setattr(validate, "prove_window", undecided)
    again = prove_programs(st.program, cand, fn.name)
    assert again.status == "refuted" and again.counterexample["replayed"], again.reason
    assert again.regions[0]["stored"]          # found from the kept state, then its block
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path / "b"))      # nothing kept there
    assert prove_programs(st.program, cand, fn.name).status == "unknown"
