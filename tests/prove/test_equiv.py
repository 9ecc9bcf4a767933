"""Window equivalence: proved where the two sequences are one function, refuted with a
counterexample the emulator reproduces where they are not, unknown where it cannot tell."""
from __future__ import annotations

import pytest

from asmevo.prove import harness
from asmevo.prove.equiv import Window
from asmevo.prove.equiv import prove_window as _prove_window
from asmevo.prove.machine import Context
from asmevo.prove.replay import compare_runs
from asmevo.targets.amdgpu.analysis import regs as R

CTX = Context(0x2F0)
# the solver's limit is wall-clock: on a loaded machine (CI on 2 cores beside other jobs) the
# default 5 s can run out on the float windows, turning a refutation into "unknown"
TEST_TIMEOUT_MS = 120_000


def prove_window(ctx, w, **kw):
    kw.setdefault("timeout_ms", TEST_TIMEOUT_MS)
    return _prove_window(ctx, w, **kw)


def live(*names) -> int:
    m = 0
    for n in names:
        m |= R.operand_mask(n)
    return m


def window(k0, cand, *names):
    return Window(list(k0), list(cand), live(*names, "exec"), 0)


def replays(w, got) -> bool:
    """Run the refutation's entry state on the emulator again, here: K0's and the
    candidate's windows differ on something live, in memory or in the fault status."""
    snap = got.snapshot
    vregs = sorted(snap.v)
    a = harness.run(snap, w.k0, vregs=vregs)
    b = harness.run(snap, w.cand, vregs=vregs)
    return bool(compare_runs(a, b, w, 0))


def test_a_reordering_is_proved():
    w = window(["v_add_u32_e32 v1, v2, v3", "v_mul_f32_e32 v4, v1, v5", "s_add_u32 s0, s1, s2"],
               ["s_add_u32 s0, s2, s1", "v_add_u32_e32 v1, v3, v2", "v_mul_f32_e32 v4, v1, v5"],
               "v1", "v4", "s0", "scc")
    assert prove_window(CTX, w).status == "proved"


def test_a_fused_shift_add_is_proved():
    w = window(["v_lshlrev_b32_e32 v1, 2, v2", "v_add_u32_e32 v1, v1, v3"],
               ["v_lshl_add_u32 v1, v2, 2, v3"], "v1")
    assert prove_window(CTX, w).status == "proved"


def test_merged_loads_are_proved():
    w = window(["global_load_dword v1, v[2:3], off", "global_load_dword v4, v[2:3], off offset:4"],
               ["global_load_dwordx2 v[5:6], v[2:3], off", "v_mov_b32_e32 v1, v5",
                "v_mov_b32_e32 v4, v6"], "v1", "v4")
    assert prove_window(CTX, w).status == "proved"


def test_a_dead_register_may_differ_but_a_live_one_may_not():
    k0, cand = ["v_mov_b32_e32 v1, v2"], ["v_mov_b32_e32 v1, v2", "v_mov_b32_e32 v9, 0"]
    assert prove_window(CTX, window(k0, cand, "v1")).status == "proved"
    got = prove_window(CTX, window(k0, cand, "v1", "v9"))
    assert got.status == "refuted" and "v9" in got.counterexample["differs"]


def test_a_dropped_canonicalize_is_refuted_with_a_signalling_nan():
    w = window(["v_max_f32_e32 v1, v2, v2"], ["v_mov_b32_e32 v1, v2"], "v1")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and got.counterexample["replayed"]
    lane = got.counterexample["lane"]
    x = int(got.counterexample["entry"][f"v2[{lane}]"], 16)
    assert (x >> 23) & 0xFF == 0xFF and x & 0x7FFFFF and not x & 0x400000   # an sNaN
    assert replays(w, got)


def test_commuted_float_operands_differ_in_the_nan_they_return():
    w = window(["v_mul_f32_e32 v4, v1, v5"], ["v_mul_f32_e32 v4, v5, v1"], "v4")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and replays(w, got)


def test_a_changed_constant_is_refuted():
    w = window(["v_mov_b32_e32 v1, 0xff800000"], ["v_mov_b32_e32 v1, 0xff7fffff"], "v1")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and replays(w, got)


def test_a_load_moved_above_a_store_of_another_lane_is_refuted():
    w = window(["global_store_dword v[2:3], v1, off", "global_load_dword v4, v[6:7], off"],
               ["global_load_dword v4, v[6:7], off", "global_store_dword v[2:3], v1, off"], "v4")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and got.counterexample["memory"]
    assert replays(w, got)


# tests/verify/wrong's same_address_lanes and special_layout windows: the solver's limit
# here is 20 s, which the encodings before issue 40's (a DPP lane table as an array, a
# store's memory as an equation beside the question) ran past on both
FAST_MS = 20_000


# the second: tri_dequant's, a short store, whose model once put a lane's store at
# 0xfffffffffffffffe (taken as mapped: the layout's wrap below) and did not replay
@pytest.mark.parametrize("lo, hi, store", [
    ("v6", "v7", "global_store_dwordx2 v[10:11], v[8:9], off"),
    ("v0", "v1", "global_store_short v[10:11], v2, off offset:512")])
def test_a_second_store_of_two_lanes_to_one_address_is_refuted(lo, hi, store):
    w = window([], [f"v_mov_b32_e32 v10, {lo}", f"v_mov_b32_e32 v11, {hi}",
                    f"v_mov_b32_dpp v10, {lo} quad_perm:[1,1,3,3] row_mask:0xf bank_mask:0xf",
                    f"v_mov_b32_dpp v11, {hi} quad_perm:[1,1,3,3] row_mask:0xf bank_mask:0xf",
                    store])
    got = prove_window(CTX, w, timeout_ms=FAST_MS)
    assert got.status == "refuted" and replays(w, got), got.reason


def test_a_store_of_zero_where_two_neighbouring_lanes_hold_nan_is_refuted():
    w = window(["global_store_dword v[0:1], v4, off"],
               ["v_mov_b32_e32 v6, 0",
                "v_mov_b32_dpp v6, v4 row_shr:1 row_mask:0xf bank_mask:0xf",
                "v_cmp_u_f32_e64 s[6:7], v6, v6", "v_cndmask_b32_e64 v7, 0, v4, s[6:7]",
                "v_cmp_u_f32_e64 s[6:7], v7, v7", "v_cndmask_b32_e64 v7, v4, 0, s[6:7]",
                "global_store_dword v[0:1], v7, off"])
    got = prove_window(CTX, w, timeout_ms=FAST_MS)
    assert got.status == "refuted" and replays(w, got), got.reason
    assert got.counterexample["differs"]["memory"]["candidate"] == "0x0"


def test_a_replay_compares_memory_and_lds_at_the_first_barrier():
    """The harness runs up to a window's first s_barrier: what the other waves see there
    (LDS written before it) is what a replay compares; registers are not."""
    snap = harness.Snapshot(v={1: [4 * i for i in range(64)], 4: list(range(64)),
                               6: [7] * 64})
    snap.s[126] = 0xFFFFFFFF
    snap.s[127] = 0xFFFFFFFF
    k0 = ["ds_write_b32 v1, v4", "s_barrier", "v_mov_b32_e32 v4, 0"]
    cand = ["v_add_u32_e32 v4, v4, v6", "ds_write_b32 v1, v4", "s_barrier"]
    w = window(k0, cand, "v4")
    a = harness.run(snap, k0, vregs=[1, 4, 6])
    b = harness.run(snap, cand, vregs=[1, 4, 6])
    assert (a.status, b.status) == ("barrier", "barrier")
    assert compare_runs(a, b, w, 0) == ["LDS at the barrier"]
    same = ["v_add_u32_e32 v4, v4, v6", "v_sub_u32_e32 v4, v4, v6"] + k0[:2]
    assert compare_runs(a, harness.run(snap, same, vregs=[1, 4, 6]), w, 0) == []


def test_waits_and_nops_change_nothing():
    w = window(["s_waitcnt vmcnt(0)", "v_add_u32_e32 v1, v2, v3"],
               ["v_add_u32_e32 v1, v2, v3", "s_nop 3", "s_waitcnt vmcnt(0) lgkmcnt(0)"], "v1")
    assert prove_window(CTX, w).status == "proved"


def test_an_unmodeled_instruction_is_unknown():
    w = window(["v_mfma_f32_4x4x1f32 v[0:3], v4, v5, v[0:3]"], ["s_nop 0",
               "v_mfma_f32_4x4x1f32 v[0:3], v4, v5, v[0:3]"], "v0")
    got = prove_window(CTX, w)
    assert got.status == "unknown" and "not modeled" in got.reason


def test_same_answers_different_terms_from_a_state_it_found_before(monkeypatch):
    import z3
    from asmevo.prove import machine as M
    ctx = Context(0x2F0)
    a, b = z3.BitVec("a", 64), z3.BitVec("b", 64)
    assert ctx.same(a * 2, a + a)                 # equal for every state: the solver says so
    assert not ctx.same(a, a + 4)                 # the solver finds a state where they differ
    assert len(ctx._witnesses) == 1
    asked = []
    real = M.z3.Solver
    monkeypatch.setattr(M.z3, "Solver", lambda *x: asked.append(1) or real(*x))
    assert not ctx.same(b, b + 8)                 # told apart by that state: no question
    assert asked == []
    assert not ctx.same(b * 3, b + b)             # that state (b = 0) cannot tell: asked
    assert asked == [1] and len(ctx._witnesses) == 2
    assert ctx.same(b * 3, b + b + b)


def test_a_short_access_whose_end_wraps_past_2_64_is_unmapped_in_the_harness_layout():
    # 0xfffffffffffffffe + 2 wraps to 0: compared that way, the layout question took a
    # store there for a mapped one, and its model did not replay (tri_dequant's
    # same_address_lanes candidate)
    from asmevo.prove.replay import harness_layout
    from asmevo.prove.z3env import z3
    ctx = Context(0x2F0)

    def unmapped(addr):
        t = ctx.unmapped_small(z3.BitVecVal(addr, 64), 2)
        return z3.simplify(z3.substitute(t, *harness_layout(ctx)))
    assert z3.is_true(unmapped(0xFFFFFFFFFFFFFFFE))
    assert z3.is_false(unmapped(harness.BASE + harness.HEAP_BYTES - 2))
    assert z3.is_true(unmapped(harness.BASE + harness.HEAP_BYTES - 1))


def test_a_window_past_the_proofs_deadline_is_unknown_not_run_on():
    import time
    w = window(["v_add_u32_e32 v1, v2, v3", "v_mul_f32_e32 v4, v1, v5"],
               ["v_add_u32_e32 v1, v3, v2", "v_mul_f32_e32 v4, v1, v5"], "v1", "v4")
    ctx = Context(0x2F0)
    assert prove_window(ctx, w).status == "proved"
    ctx.deadline = time.perf_counter() - 1        # the budget ran out before this window
    got = prove_window(ctx, w)
    assert got.status == "unknown" and "time budget" in got.reason
    assert "v_add_u32_e32 v1, v2, v3" in got.reason   # where it stopped
