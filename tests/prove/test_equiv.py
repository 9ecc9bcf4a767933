"""Window equivalence: proved where the two sequences are one function, refuted with a
counterexample the emulator reproduces where they are not, unknown where it cannot tell."""
from __future__ import annotations

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


def test_waits_and_nops_change_nothing():
    w = window(["s_waitcnt vmcnt(0)", "v_add_u32_e32 v1, v2, v3"],
               ["v_add_u32_e32 v1, v2, v3", "s_nop 3", "s_waitcnt vmcnt(0) lgkmcnt(0)"], "v1")
    assert prove_window(CTX, w).status == "proved"


def test_an_unmodeled_instruction_is_unknown():
    w = window(["v_mfma_f32_4x4x1f32 v[0:3], v4, v5, v[0:3]"], ["s_nop 0",
               "v_mfma_f32_4x4x1f32 v[0:3], v4, v5, v[0:3]"], "v0")
    got = prove_window(CTX, w)
    assert got.status == "unknown" and "not modeled" in got.reason
