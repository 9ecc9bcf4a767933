"""``pipeline``: a written-out pipelined loop, bit-equality for every trip count, the
last iteration's prefetch never reading past what K0 reads (and a control that shows
the test would see it), refusals, and verifier-checked edits on naive kernels."""
from __future__ import annotations


import numpy as np
import pytest

from asmevo.emu.machine.memory import MemoryFault
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.loop_helpers import (LANE_LOOP, ROW_LOOP, SUM_LOOP, Individual,
                                                NAIVE, apply_edits, context, program,
                                                remainder, run, spec_program, symbolic,
                                                text_of, verdict)

# SUM_LOOP pipelined one iteration ahead. L0 (K0's header): the first load and pointer
# step (prologue). L1: copy the loaded value (v5 -> v0, free in the loop), then the
# loop's own test for "another iteration follows" (s5 > 1: the next exit test
# continues); only then the next load into v5, while the addition reads the copy.
# L2: the last iteration's addition without a prefetch (epilogue), then K0's loop as
# the remainder (L3, unreachable here: the test is exact for one iteration) and the
# exit label L4.
SUM_PIPELINED = [
    "L0:",
    "global_load_dword v5, v[2:3], off",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "L1:",
    "s_waitcnt vmcnt(0)",
    "v_mov_b32 v0, v5",
    "s_cmp_gt_u32 s5, 1",
    "s_cbranch_scc0 L2",
    "global_load_dword v5, v[2:3], off",
    "v_lshl_add_u64 v[2:3], v[2:3], 0, 64",
    "v_add_f32_e32 v4, v4, v0",
    "s_add_i32 s5, s5, -1",
    "s_cmp_eq_u32 s5, 0",
    "s_branch L1",
    "L2:",
    "s_add_i32 s5, s5, -1",
    "s_cmp_eq_u32 s5, 0",
    "v_add_f32_e32 v4, v4, v0",
    "s_cbranch_scc0 L3",
    "s_branch L4",
] + remainder("L3") + ["L4:"]


def _pipelined(body, factor, seed=0):
    prog, fn = program(body)
    edit = get_operator("pipeline", factors=(factor,)).mutate(Individual(), context(prog, seed))
    assert edit is not None
    return prog, fn, text_of(apply_edits(prog, [edit]).function("k"))


def test_written_out():
    _, _, new = _pipelined(SUM_LOOP, 1)
    head = next(k for k, t in enumerate(new) if t.endswith(":"))
    assert symbolic(new[head:]) == SUM_PIPELINED


@pytest.mark.parametrize("body", [SUM_LOOP, ROW_LOOP], ids=["column", "row"])
@pytest.mark.parametrize("factor", [1, 2, 4])
def test_bit_equal_and_no_read_past_the_data(body, factor):
    """Each buffer holds exactly the n rows the loop reads (no slack: a prefetch of
    row n would fault), for every trip count around the group size."""
    _, fn, new = _pipelined(body, factor, seed=factor)
    rng = np.random.default_rng(factor)
    for n in range(1, 3 * factor + 3):
        x = rng.standard_normal(16 * n).astype(np.float32)
        a = run(text_of(fn), s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        b = run(new, s={5: n}, buffers={"x": x.copy()}, ptrs={"x": 2})
        assert np.array_equal(a.v(4), b.v(4)), n
        assert np.array_equal(a.v(2), b.v(2)) and b.s(5) == 0


@pytest.mark.parametrize("factor", [1, 2])
def test_the_prefetch_guard_is_what_keeps_it_in_bounds(factor):
    """Control: without the branch to the epilogue the last group's prefetch reads
    past the buffer, and the emulator faults -- so the test above would see it."""
    _, _, new = _pipelined(SUM_LOOP, factor)
    sym = symbolic(new)
    # the steady block ends in "s_branch <its own label>"; the epilogue label follows it
    k = next(i for i, t in enumerate(sym) if t.startswith("s_branch ")
             and sym.index(t.split()[1] + ":") < i)
    epilogue = sym[k + 1][:-1]
    unguarded = [t for t, s in zip(new, sym) if s != f"s_cbranch_scc0 {epilogue}"]
    assert len(unguarded) == len(new) - 1
    x = np.arange(16 * 2 * factor, dtype=np.float32)
    with pytest.raises(MemoryFault, match="past the end of x"):
        run(unguarded, s={5: 2 * factor}, buffers={"x": x}, ptrs={"x": 2})


# SUM_LOOP that also stores the running sum to y (s[6:7]): a cumulative sum
CUMSUM = SUM_LOOP.replace(
    "  v_lshl_add_u64 v[2:3], s[2:3], 0, v[2:3]\n",
    "  v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]\n  v_lshl_add_u64 v[2:3], s[2:3], 0, v[2:3]\n"
).replace("  v_add_f32_e32 v4, v4, v5\n",
          "  v_add_f32_e32 v4, v4, v5\n  global_store_dword v[6:7], v4, off\n"
          "  v_lshl_add_u64 v[6:7], v[6:7], 0, 64\n")


def test_divergent_loops_are_not_pipelined():
    prog, _ = program(LANE_LOOP)
    ctx = context(prog)
    assert isinstance(get_operator("pipeline").mutate(Individual(), ctx), Rejected)
    assert "divergent" in ctx.reasons[-1]


def test_a_store_the_prefetch_would_pass_is_refused():
    prog, _ = program(CUMSUM)
    ctx = context(prog)
    assert isinstance(get_operator("pipeline").mutate(Individual(), ctx), Rejected)
    assert all("stage 1 stores where stage 0 loads from" in r for r in ctx.reasons)


@pytest.mark.parametrize("kernel, isa", [("sum_cols", None), ("matmul", None),
                                         ("kl_div_rows", None), ("matvec", "gfx90a")])
def test_naive_kernels_stay_bit_equal_through_the_verifier(kernel, isa):
    spec, prog = spec_program(NAIVE / kernel, isa)
    ctx = context(prog, 1, spec.kernel)
    edit = get_operator("pipeline").mutate(Individual(), ctx)
    assert edit is not None, ctx.reasons
    v = verdict(NAIVE / kernel, (edit,), isa)
    assert v.status == "equal", (str(edit), v.reason)
