"""``schedule``: hand-written windows with their exact schedules, and real blocks."""
from __future__ import annotations

import random

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.liveness import dependency_dag
from asmevo.targets.amdgpu.analysis.gate import static_gate
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.common import nops, pinned_waits, regions, trim_window
from asmevo.operators.rules.schedule import reschedule, schedule_region
from tests.operators.rules.helpers import Individual, context, kernel

TWO_LOADS = ["global_load_dword v1, v[2:3], off", "s_waitcnt vmcnt(0)",
             "v_add_f32_e32 v4, v1, v1",
             "global_load_dword v5, v[6:7], off", "s_waitcnt vmcnt(0)",
             "v_add_f32_e32 v8, v5, v5"]


def _scheduled(texts, seed, noise=0.0):
    return recompute_waitcnts(reschedule(texts, random.Random(seed), "gfx942", noise))


def test_two_loads_are_hoisted_above_both_uses():
    assert _scheduled(TWO_LOADS, 0) == [
        "global_load_dword v1, v[2:3], off",
        "global_load_dword v5, v[6:7], off",
        "s_waitcnt vmcnt(1)",
        "v_add_f32_e32 v4, v1, v1",
        "s_waitcnt vmcnt(0)",
        "v_add_f32_e32 v8, v5, v5"]


def test_ties_are_broken_by_the_rng():
    # both loads have the same critical path: seed 1 issues the second one first
    assert _scheduled(TWO_LOADS, 1) == [
        "global_load_dword v5, v[6:7], off",
        "global_load_dword v1, v[2:3], off",
        "s_waitcnt vmcnt(1)",
        "v_add_f32_e32 v8, v5, v5",
        "s_waitcnt vmcnt(0)",
        "v_add_f32_e32 v4, v1, v1"]


def test_independent_alu_fills_the_load_latency():
    texts = ["v_lshlrev_b32_e32 v2, 2, v0", "v_mov_b32_e32 v3, 0",
             "global_load_dword v4, v[2:3], off", "s_waitcnt vmcnt(0)",
             "v_add_u32_e32 v4, v4, v4", "v_add_u32_e32 v9, 1, v8"]
    assert _scheduled(texts, 0) == [
        "v_lshlrev_b32_e32 v2, 2, v0", "v_mov_b32_e32 v3, 0",
        "global_load_dword v4, v[2:3], off",
        "v_add_u32_e32 v9, 1, v8",
        "s_waitcnt vmcnt(0)",
        "v_add_u32_e32 v4, v4, v4"]


def test_nothing_crosses_a_barrier_and_its_wait_is_kept():
    texts = ["ds_write_b32 v1, v2", "global_load_dword v5, v[6:7], off",
             "s_waitcnt vmcnt(0) lgkmcnt(0)", "s_barrier", "v_add_f32_e32 v8, v5, v5",
             "v_mov_b32_e32 v9, 1"]
    assert pinned_waits(texts) == {2}
    assert regions(texts) == [(0, 2), (4, 6)]
    for seed in range(8):
        out = reschedule(texts, random.Random(seed), "gfx942", 0.5)
        assert out[2:4] == texts[2:4]
        assert set(out[:2]) == set(texts[:2]) and set(out[4:]) == set(texts[4:])


def test_stores_keep_their_order_with_loads_of_unknown_address():
    texts = ["global_store_dword v[0:1], v2, off", "global_load_dword v3, v[4:5], off"]
    for seed in range(8):
        assert reschedule(texts, random.Random(seed), "gfx942", 1.0) == texts


def test_every_schedule_respects_the_dag():
    _, program = kernel("tri_softmax")
    fn = program.function("tri_softmax")
    texts = [i.text for i in fn.instructions[62:208]]
    kept = [t for t in texts if not t.startswith(("s_waitcnt", "s_nop"))]
    for a, b in regions(kept):
        for seed in range(4):
            order = schedule_region(kept[a:b], random.Random(seed), "gfx942", 0.3)
            assert dependency_dag(kept[a:b]).respects(order)


def test_common_helpers():
    assert nops(1) == ["s_nop 0"]
    assert nops(10) == ["s_nop 7", "s_nop 1"]
    assert trim_window(5, 9, ["a", "b", "c", "d"], ["a", "c", "b", "d"]) == (6, 8, ["c", "b"])
    assert trim_window(5, 7, ["a", "b"], ["a", "x", "b"]) == (5, 6, ["a", "x"])


def test_operator_on_a_real_block_passes_the_gate_and_is_deterministic():
    op = get_operator("schedule")
    e1 = op.mutate(Individual(), context("vector_add", 0))
    e2 = op.mutate(Individual(), context("vector_add", 0))
    assert isinstance(e1, Edit) and e1 == e2 and e1.operator == "schedule"
    _, program = kernel("vector_add")
    edited = apply_edits(program, (e1,))
    assert static_gate(edited) is None
    old = program.function("vector_add").instructions
    new = edited.function("vector_add").instructions
    strip = lambda xs: sorted(i.text for i in xs if not i.text.startswith(("s_waitcnt", "s_nop")))
    assert strip(old) == strip(new)


def test_operator_says_why_when_nothing_moves():
    ctx = context("vector_add", 0, windows=[("vector_add", 22, 23)])
    assert isinstance(get_operator("schedule").mutate(Individual(), ctx), Rejected)
    assert ctx.reasons


def test_trim_window_keeps_pure_insertions_in_place():
    """An empty old window must not swallow the instruction after it."""
    from asmevo.operators.rules.common import trim_window
    assert trim_window(5, 5, [], ["s_nop 0"]) == (5, 5, ["s_nop 0"])
    assert trim_window(5, 7, ["a", "b"], ["a", "x", "b"]) == (5, 6, ["a", "x"])
