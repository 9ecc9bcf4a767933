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


def _naive(kernel):
    return EvalContext(spec_path=str(ROOT / "experiments" / "kernels_naive" / kernel),
                       size="small", timing="none")


VECMAT_BODY = ["global_load_dword v5, v[2:3], off", "s_load_dword s2, s[0:1], 0x0",
               "s_add_i32 s4, s4, -1", "s_add_u32 s0, s0, 4", "s_addc_u32 s1, s1, 0",
               "v_lshl_add_u64 v[2:3], v[2:3], 0, s[8:9]", "s_cmp_eq_u32 s4, 0",
               "s_waitcnt vmcnt(0) lgkmcnt(0)", "v_fmac_f32_e32 v4, s2, v5"]
STEP = "v_lshl_add_u64 v[2:3], v[2:3], 0, s[8:9]"


def _vecmat_unrolled(fn, start: int) -> Edit:
    """vecmat's loop body at ``start`` unrolled 4 times (what the unroll operator wrote)."""
    assert [i.text for i in fn.instructions[start:start + 9]] == VECMAT_BODY
    group = ["global_load_dword v6, v[2:3], off", STEP, "global_load_dword v7, v[2:3], off",
             STEP, "global_load_dword v8, v[2:3], off", STEP,
             "global_load_dword v5, v[2:3], off", "s_load_dwordx4 s[12:15], s[0:1], 0x0",
             "s_add_i32 s4, s4, -4", "s_add_u32 s0, s0, 16", STEP, "s_addc_u32 s1, s1, 0",
             "s_cmp_eq_u32 s4, 0", "s_waitcnt vmcnt(3) lgkmcnt(0)",
             "v_fmac_f32_e32 v4, s12, v6", "s_waitcnt vmcnt(2)", "v_fmac_f32_e32 v4, s13, v7",
             "s_waitcnt vmcnt(1)", "v_fmac_f32_e32 v4, s14, v8", "s_waitcnt vmcnt(0)",
             "v_fmac_f32_e32 v4, s15, v5"]
    return Edit(fn.name, start, start + 10, tuple(
        ["s_cmp_gt_u32 s4, 3", "s_cbranch_scc0 .Lae_82896aee6e"] + group +
        ["s_cbranch_scc0 .LBB_1984", "s_branch .Lae_ffa3a6fbde", ".Lae_82896aee6e:"] +
        VECMAT_BODY + ["s_cbranch_scc0 .Lae_82896aee6e", ".Lae_ffa3a6fbde:"]))


def test_a_schedule_in_an_unrolled_loops_remainder_is_compared_with_k0s_body():
    """The regions of a loop proof index the candidate with its loop folded back: the
    remainder's two swapped instructions (a VALU op between s_add_u32 and its
    s_addc_u32, which reads SCC) are K0's body, not the unrolled group's loads there
    (bench_operators refuted this vecmat candidate though every launch was equal)."""
    ctx = _naive("vecmat")
    st, fn = _k0(ctx)
    swap = Edit(fn.name, 55, 57, (STEP, "s_addc_u32 s1, s1, 0"))
    cand = _apply(ctx, [Edit(fn.name, 18, 19, ("s_nop 0",)), _vecmat_unrolled(fn, 26), swap])
    assert not isinstance(cand, Verdict), cand
    assert [i.text for i in cand.function(fn.name).instructions[54:57]] == \
        ["s_add_u32 s0, s0, 4", STEP, "s_addc_u32 s1, s1, 0"]
    p = prove_programs(st.program, cand, fn.name)
    assert p.kind == "loop" and p.status != "refuted", p.reason
    remainder = [r for r in p.regions if "k0" in r]
    assert remainder and all(r["status"] == "proved" for r in remainder), remainder


def test_a_kernarg_load_hoisted_before_an_unrolled_loop_keeps_the_kernarg_facts():
    """Where the kernarg pointer is written only in the loop (its steps), a region in the
    entry block still has the segment mapped: the hoisted 16-byte load from it does not
    fault (the unfolded candidate's group writes the pointer too, but not before it)."""
    ctx = _naive("vecmat")
    st, fn = _k0(ctx)
    assert fn.instructions[19].text == "s_load_dwordx4 s[0:3], s[0:1], 0x0"
    hoist = [Edit(fn.name, 19, 20, ("s_mov_b64 s[0:1], s[12:13]", "s_mov_b64 s[2:3], s[14:15]")),
             Edit(fn.name, 2, 3, ("s_load_dwordx4 s[12:15], s[0:1], 0x0",
                                  "s_waitcnt lgkmcnt(0)"))]
    parent = _apply(ctx, hoist)
    cand = _apply(ctx, hoist + [_vecmat_unrolled(parent.function(fn.name), 28)])
    assert not isinstance(cand, Verdict), cand
    p = prove_programs(st.program, cand, fn.name)
    assert p.kind == "loop" and p.status != "refuted", p.reason
    entry = next(r for r in p.regions if r.get("k0") == [2, 2])
    assert entry["status"] != "refuted", entry


def test_a_difference_only_in_a_register_the_candidate_has_dead_is_not_a_refutation():
    """mean_cols: the kernarg load of block 5 hoisted to the entry, then the dead
    ``v_mov_b32 v4, s9`` before it scalarized into s0, which K0 still reads there (its
    load from s[0:1]) but the candidate, loading from the hoisted copy, never does: the
    block's difference in s0 shows nothing (bench_operators refuted it, every launch
    equal). A difference in a register the candidate reads is still a refutation."""
    ctx = _naive("mean_cols")
    st, fn = _k0(ctx)
    assert fn.instructions[19].text == "v_mov_b32_e32 v4, s9"
    assert fn.instructions[20].text == "s_load_dwordx2 s[6:7], s[0:1], 0x0"
    hoist = [Edit(fn.name, 20, 21, ("s_mov_b64 s[6:7], s[10:11]",)),
             Edit(fn.name, 2, 3, ("s_load_dwordx2 s[10:11], s[0:1], 0x0",
                                  "s_waitcnt lgkmcnt(0)"))]
    cand = _apply(ctx, hoist + [Edit(fn.name, 20, 21, ("s_mov_b32 s0, s9",))])
    p = prove_programs(st.program, cand, fn.name)
    assert p.status == "unknown" and "candidate has dead" in p.reason, p.reason
    wrong = _apply(ctx, hoist + [Edit(fn.name, 20, 21, ("s_mov_b32 s8, s9",))])  # the trip count
    assert prove_programs(st.program, wrong, fn.name).status == "refuted"


def test_a_sound_deletion_of_a_recomputed_move_is_not_refuted_from_an_unreachable_state():
    """aiter_pa: ``v_mov_b32 v40, s17`` at #247 recomputes #241 (neither register written
    between, EXEC unchanged): deleting it is sound. A refutation asked from the region's
    entry with no facts from before it (v40 != s17 there, K0 then faults) once rejected
    this accepted peephole edit; the prover proves it."""
    ctx = EvalContext(spec_path=str(KERNELS / "aiter_pa"), size="small", timing="none")
    st, fn = _k0(ctx)
    assert fn.instructions[241].text == fn.instructions[247].text == "v_mov_b32_e32 v40, s17"
    cand = _apply(ctx, [Edit(st.spec.kernel, 247, 248, ("s_nop 1",))])
    p = prove_programs(st.program, cand, st.spec.kernel, block=st.spec.block)
    assert p.status == "proved", p.reason


def test_code_inserted_where_a_fall_through_block_starts_is_proved_in_that_block():
    """tri_matmul_bf16: #69 ``s_cbranch_scc1`` ends a block and #70 starts the next one
    with no label. window_crossover's candidate (bench_operators at N=200) recomputes
    #71's ``v_and_b32 v1, 63, v0`` before #70: K0's side of the region is empty at #70.
    It belongs to #70's block; taken as the block before the branch, the region's
    liveness and its block were another block's, and the prover refuted this sound
    candidate (the two blocks replayed against each other)."""
    ctx = EvalContext(spec_path=str(KERNELS / "tri_matmul_bf16"), size="small", timing="none")
    st, fn = _k0(ctx)
    assert fn.instructions[69].text.startswith("s_cbranch_scc1")
    assert fn.instructions[70].text == "s_and_b32 s19, s18, 0xc0"
    assert fn.instructions[71].text == "v_and_b32_e32 v1, 63, v0"
    cand = _apply(ctx, [Edit(fn.name, 70, 71, ("v_and_b32_e32 v1, 63, v0",
                                                "s_and_b32 s19, s18, 0xc0"))])
    (reg,) = diff_regions(fn, cand.function(fn.name))
    assert reg.a == (70, 70) and reg.block_a[0] == 70 and reg.block_b[0] == 70
    p = prove_programs(st.program, cand, fn.name)
    assert p.status == "proved", p.reason
    wrong = _apply(ctx, [Edit(fn.name, 70, 71, ("v_and_b32_e32 v36, 63, v0",
                                                 "s_and_b32 s19, s18, 0xc0"))])
    assert prove_programs(st.program, wrong, fn.name).status == "refuted"


def test_a_region_whose_block_window_times_out_is_proved_in_its_block_slice():
    """tri_quant_int8: #346 ``s_ashr_i32 s15, s14, 31`` starts a block (after
    ``s_cbranch_execz``); a stack of window_crossover and scalarize edits (bench_operators
    at N=200) leaves it followed by ``s_mov_b32 s0, 0`` and itself again: the region is the
    two inserted after #346. From the region's entry alone s15 may differ; the block's
    window (with the blocks that alone lead to it, 290 instructions) runs out of time, and
    the slice of the block before the region (#346 alone, all of the block's prefix) was
    not asked: the region's refutation of this sound candidate stood."""
    ctx = EvalContext(spec_path=str(KERNELS / "tri_quant_int8"), size="small", timing="none")
    st, fn = _k0(ctx)
    assert fn.instructions[345].text.startswith("s_cbranch_execz")
    assert fn.instructions[346].text == "s_ashr_i32 s15, s14, 31"
    sound = ("s_ashr_i32 s15, s14, 31", "s_mov_b32 s0, 0", "s_ashr_i32 s15, s14, 31")
    cand = _apply(ctx, [Edit(fn.name, 346, 347, sound)])
    (reg,) = diff_regions(fn, cand.function(fn.name))
    assert reg.a == (347, 347) and reg.block_a[0] == 346
    p = prove_programs(st.program, cand, fn.name, timeout_ms=2000)
    assert p.status == "proved", p.reason
    wrong = _apply(ctx, [Edit(fn.name, 346, 347, sound[:2] + ("s_ashr_i32 s15, s14, 30",))])
    assert prove_programs(st.program, wrong, fn.name, timeout_ms=2000).status != "proved"
