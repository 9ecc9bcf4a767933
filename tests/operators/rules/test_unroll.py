"""``unroll``: written-out unrolled loops, bit-equality on the emulator for every trip
count (remainders included), refusals, and verifier-checked edits on naive kernels."""
from __future__ import annotations


import numpy as np
import pytest

from asmevo.targets.amdgpu.program import Label
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.loop_helpers import (LANE_LOOP, ROW_LOOP, SUM_LOOP, Individual,
                                                NAIVE, apply_edits, context, program,
                                                remainder, run, spec_program, symbolic,
                                                text_of, verdict)

# SUM_LOOP (a column sum, row stride 64 bytes) by 4: a guard (s5 > 3: the next three
# exit tests continue), four copies whose loads go first on fresh registers (v0, v1,
# v6: free in the loop) at offsets 0/64/128/192, the pointer stepped once per copy
# after them (4 x 64 is no inline constant), one counter step of -4, the additions in
# K0's order, the branch back to K0's header label (L0, before the window), then K0's
# loop as the remainder (L1) and the exit label (L2).
SUM_BY_4 = [
    "s_cmp_gt_u32 s5, 3",
    "s_cbranch_scc0 L1",
    "global_load_dword v0, v[2:3], off",
    "global_load_dword v6, v[2:3], off offset:128",
    "global_load_dword v1, v[2:3], off offset:64",
    "global_load_dword v5, v[2:3], off offset:192",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "s_add_i32 s5, s5, -4",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "s_cmp_eq_u32 s5, 0",
    "s_waitcnt vmcnt(3)",
    "v_add_f32_e32 v4, v4, v0",
    "s_waitcnt vmcnt(1)",
    "v_add_f32_e32 v4, v4, v1",
    "v_add_f32_e32 v4, v4, v6",
    "s_waitcnt vmcnt(0)",
    "v_add_f32_e32 v4, v4, v5",
    "s_cbranch_scc0 L0",
    "s_branch L2",
] + remainder("L1") + ["L2:"]

# ROW_LOOP (unit stride per lane) by 8: the eight loads are two dwordx4 loads into
# fresh aligned tuples, the pointer moves 32 bytes once, the counter 8 once.
ROW_BY_8 = [
    "s_cmp_gt_u32 s5, 7",
    "s_cbranch_scc0 L1",
    "global_load_dwordx4 v[12:15], v[2:3], off",
    "global_load_dwordx4 v[16:19], v[2:3], off offset:16",
    "s_add_i32 s5, s5, -8",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 32",
    "s_cmp_eq_u32 s5, 0",
    "s_waitcnt vmcnt(1)",
    "v_add_f32_e32 v4, v4, v12",
    "v_add_f32_e32 v4, v4, v13",
    "v_add_f32_e32 v4, v4, v14",
    "v_add_f32_e32 v4, v4, v15",
    "s_waitcnt vmcnt(0)",
    "v_add_f32_e32 v4, v4, v16",
    "v_add_f32_e32 v4, v4, v17",
    "v_add_f32_e32 v4, v4, v18",
    "v_add_f32_e32 v4, v4, v19",
    "s_cbranch_scc0 L0",
    "s_branch L2",
] + remainder("L1", 4) + ["L2:"]


def _unroll(body, factor, seed=0):
    prog, fn = program(body)
    edit = get_operator("unroll", factors=(factor,)).mutate(Individual(), context(prog, seed))
    assert not isinstance(edit, Rejected)
    return prog, fn, edit


@pytest.mark.parametrize("body, factor, want", [(SUM_LOOP, 4, SUM_BY_4),
                                                (ROW_LOOP, 8, ROW_BY_8)])
def test_written_out(body, factor, want):
    prog, fn, edit = _unroll(body, factor)
    loop = next(k for k, i in enumerate(fn.instructions) if i.mnemonic == "global_load_dword")
    assert (edit.start, edit.end) == (loop, loop + 7)
    header = next(i.name for i in fn.items if isinstance(i, Label))
    assert symbolic([f"{header}:"] + list(edit.lines))[1:] == want


@pytest.mark.parametrize("body", [SUM_LOOP, ROW_LOOP], ids=["column", "row"])
@pytest.mark.parametrize("factor", [2, 4, 8])
def test_bit_equal_for_every_trip_count(body, factor):
    prog, fn, edit = _unroll(body, factor, seed=factor)
    new = text_of(apply_edits(prog, [edit]).function("k"))
    rng = np.random.default_rng(factor)
    for n in range(1, 2 * factor + 4):
        x = rng.standard_normal(16 * n).astype(np.float32)     # exactly n rows: no slack
        a = run(text_of(fn), s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        b = run(new, s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        assert np.array_equal(a.v(4), b.v(4)), n
        assert b.s(5) == a.s(5) == 0 and np.array_equal(a.v(2), b.v(2))


@pytest.mark.parametrize("body, reason", [
    (SUM_LOOP.replace("s_cmp_eq_u32 s5, 0", "s_and_b64 exec, exec, vcc\n  s_cmp_eq_u32 s5, 0"),
     "writes EXEC"),
    (SUM_LOOP.replace("s_waitcnt vmcnt(0)", "s_waitcnt vmcnt(0)\n  s_barrier"), "s_barrier"),
    (SUM_LOOP.replace("s_add_i32 s5, s5, -1", "s_add_i32 s5, s5, s6"), "constant"),
    (SUM_LOOP.replace("global_load_dword v5", "s_cselect_b32 s7, 1, 0\n  global_load_dword v5"),
     "SCC of the previous iteration"),
    ("v_mov_b32_e32 v4, 0", "no single-block loop"),
])
def test_refused_with_a_reason(body, reason):
    prog, _ = program(body)
    ctx = context(prog)
    assert isinstance(get_operator("unroll").mutate(Individual(), ctx), Rejected)
    assert reason in ctx.reasons[-1]


@pytest.mark.parametrize("kernel, isa", [("sum_rows", None), ("matmul", None),
                                         ("matvec", None), ("softmax_rows", None),
                                         ("sum_rows", "gfx90a"), ("matmul", "gfx90a")])
def test_naive_kernels_stay_bit_equal_through_the_verifier(kernel, isa):
    """Every loop of the kernel unrolled (rng-chosen factors), verified as a search
    candidate after each edit."""
    spec, prog = spec_program(NAIVE / kernel, isa)
    op = get_operator("unroll")
    edits = []
    for seed in range(4):
        e = op.mutate(Individual(edits), context(prog, seed, spec.kernel))
        if isinstance(e, Rejected):
            break
        edits.append(e)
        v = verdict(NAIVE / kernel, edits, isa)
        assert v.status == "equal", (kernel, [str(x) for x in edits], v.reason)
    assert edits


def test_divergent_loop_guard_written_out():
    """for (i = lane; i < n; i += 64): the group of 4 runs only if no active lane leaves
    within three more steps (i < n - 192, n - 192 saturated at INT_MIN); the copies'
    EXEC updates go, the last copy's stays with the back-branch."""
    prog, fn, edit = _unroll(LANE_LOOP, 4)
    lines = list(edit.lines)
    assert lines[:5] == ["s_sub_i32 s0, s5, 0xc0", "s_cselect_b32 s0, 0x80000000, s0",
                         "v_cmp_gt_i32_e64 s[2:3], s0, v1", "s_andn2_b64 s[2:3], exec, s[2:3]",
                         lines[4]]
    assert lines[4].startswith("s_cbranch_scc1 .Lae_") and lines[4].split()[1] + ":" in lines
    group = lines[5:lines.index(next(t for t in lines if t.startswith("s_cbranch_execnz")))]
    assert sum(t.startswith("s_andn2_b64 exec") for t in group) == 1 and \
        group[-1] == "s_andn2_b64 exec, exec, s[8:9]"
    assert sum(t.startswith("global_load_dword") for t in group) == 4


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_divergent_loop_bit_equal_for_every_lane_trip_count(factor):
    prog, fn, edit = _unroll(LANE_LOOP, factor, seed=factor)
    new = text_of(apply_edits(prog, [edit]).function("k"))
    rng = np.random.default_rng(factor)
    for n in [1, 5, 63, 64, 65, 127, 128, 200, 64 * factor - 1, 64 * factor + 1, 700]:
        x = rng.standard_normal(n).astype(np.float32)            # no slack past x[n-1]
        a = run(text_of(fn), s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        b = run(new, s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        assert np.array_equal(a.v(4), b.v(4)), n
        assert np.array_equal(a.v(1), b.v(1)) and a.s(126) == b.s(126), n


@pytest.mark.parametrize("kernel", ["reduce_sum", "softmax"])
def test_divergent_corpus_kernels_stay_bit_equal_through_the_verifier(kernel):
    corpus = NAIVE.parent / "kernels"
    spec, prog = spec_program(corpus / kernel)
    ctx = context(prog, 0, spec.kernel)
    edit = get_operator("unroll").mutate(Individual(), ctx)
    assert not isinstance(edit, Rejected), ctx.reasons
    v = verdict(corpus / kernel, (edit,))
    assert v.status == "equal", (str(edit), v.reason)
