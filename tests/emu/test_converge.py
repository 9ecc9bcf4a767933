"""Candidates finished as K0's (asmevo.emu.run.converge): the same results as their passes run
to the end, field by field, and only where their state met K0's."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.edits import Edit
from asmevo.emu.run import batch, converge
from asmevo.emu.run.batch import Request, launch_many, make_pass
from asmevo.emu.run.launch import emulator_for
from asmevo.emu.machine.memory import Memory
from asmevo.launch.spec import load_spec
from asmevo.verify.evaluate import EvalContext, build_candidate, k0_state
from experiments.bench_fastpath import corpus_requests, differences
from tests.conftest import KERNELS
from tests.emu.asmdsl import build_kernel
from tests.emu.test_launch import spec_for


def _outcome(emu, like, spec, reqs, **kw):
    """(results with like=, results of the pass run to its end, how the like= pass went)."""
    before = dict(converge.STATS)
    got = launch_many(emu, spec, reqs, like=like, **kw)
    full = launch_many(emu, spec, reqs, **kw)
    how = next((k for k in ("converged", "diverged", "declined")
                if converge.STATS[k] > before[k]), None)
    return got, full, how


def _same(got, full):
    assert got is not None and full is not None
    for i, (a, b) in enumerate(zip(full, got)):
        assert differences(a, b) == [], (i, differences(a, b))


def _softmax_swap(row: int) -> tuple[bytes, object]:
    ctx = EvalContext(spec_path=str(KERNELS / "softmax"), size="small", timing="none")
    ins = k0_state(ctx).program.function("softmax").instructions
    data, verdict = build_candidate(ctx, (Edit("softmax", row, row + 2,
                                               (ins[row + 1].text, ins[row].text)),))
    assert verdict is None
    return data, k0_state(ctx)


@pytest.fixture
def always_compare(monkeypatch):
    """Compare wherever a checkpoint allows, whatever the comparison costs against the
    pass (a timing: on a loaded machine it could decline a candidate these tests need)."""
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 0.0)


@pytest.mark.parametrize("row", [2, 23, 44, 104])
def test_swapped_rows_take_k0s_future_with_every_field_of_the_full_pass(row, always_compare):
    data, st = _softmax_swap(row)
    spec = load_spec(KERNELS / "softmax", "small")
    got, full, how = _outcome(emulator_for(data), emulator_for(st.k0_bytes), spec,
                              corpus_requests(spec))
    assert how == "converged"
    _same(got, full)


def test_a_wrong_candidate_is_apart_at_the_checkpoint_and_runs_in_full(always_compare):
    """v_exp's argument scaled by 1.5 instead of log2(e): the state differs at the checkpoint
    after it, so the candidate's own pass gives its (different) outputs."""
    ctx = EvalContext(spec_path=str(KERNELS / "softmax"), size="small", timing="none")
    st = k0_state(ctx)
    ins = st.program.function("softmax").instructions
    i = next(i for i, x in enumerate(ins) if x.text.startswith("v_mul_f32_e32") and
             "0x3fb8aa3b" in x.text)
    wrong = ins[i].text.replace("0x3fb8aa3b", "0x3fc00000")
    data, verdict = build_candidate(ctx, (Edit("softmax", i, i + 1, (wrong,)),))
    assert verdict is None
    spec = load_spec(KERNELS / "softmax", "small")
    reqs = corpus_requests(spec)
    got, full, how = _outcome(emulator_for(data), emulator_for(st.k0_bytes), spec, reqs)
    assert how == "diverged"
    _same(got, full)
    k0 = launch_many(emulator_for(st.k0_bytes), spec, reqs)
    assert any(differences(a, b) for a, b in zip(k0, got))


def test_a_loop_body_edit_is_declined():
    """matmul_tiled's K loop: at any checkpoint before the loop's end K0 runs the changed
    rows again, and the one after it lies past most of the pass."""
    from asmevo.targets.amdgpu.registers import register_ranges
    ctx = EvalContext(spec_path=str(KERNELS / "matmul_tiled"), size="small", timing="none")
    st = k0_state(ctx)
    ins = st.program.function("matmul_tiled").instructions
    regs = [{(r.kind, n) for r in register_ranges(x.operands) for n in r} for x in ins]
    i = next(i for i in range(40, len(ins) - 1) if ins[i].mnemonic.startswith("ds_read")
             and ins[i + 1].mnemonic.startswith("ds_read") and not regs[i] & regs[i + 1])
    data, verdict = build_candidate(ctx, (Edit("matmul_tiled", i, i + 2,
                                               (ins[i + 1].text, ins[i].text)),))
    assert verdict is None
    spec = load_spec(KERNELS / "matmul_tiled", "small")
    got, full, how = _outcome(emulator_for(data), emulator_for(st.k0_bytes), spec,
                              corpus_requests(spec))
    assert how == "declined"
    _same(got, full)


_READS_ITS_CODE = """
    s_load_dwordx2 s[8:9], s[0:1], 0x0
    v_mov_b32_e32 v1, {a}
    v_mov_b32_e32 v2, {b}
    s_branch .Lread
.Lread:
    s_getpc_b64 s[4:5]
    s_sub_u32 s4, s4, 16
    s_subb_u32 s5, s5, 0
    s_load_dword s6, s[4:5], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32_e32 v3, s6
    v_mov_b32_e32 v4, 0
    global_store_dword v4, v3, s[8:9]
"""


def test_k0_reading_its_code_object_after_the_checkpoint_is_never_taken_for_the_candidate(
        monkeypatch):
    """The kernel stores the bytes of one of its own rows, which the candidate swapped:
    the two states are alike at the checkpoint, but K0's future reads its code object,
    so the candidate runs in full (and stores its own bytes). Without the watch on K0's
    reads the candidate would be handed K0's output."""
    k0 = emulator_for(build_kernel(_READS_ITS_CODE.format(a=1, b=2), buffers=1, nv=8, acc=8))
    cand_data = build_kernel(_READS_ITS_CODE.format(a=1, b=2).replace(
        "v_mov_b32_e32 v1, 1\n    v_mov_b32_e32 v2, 2",
        "v_mov_b32_e32 v2, 2\n    v_mov_b32_e32 v1, 1"), buffers=1, nv=8, acc=8)
    cand = emulator_for(cand_data)
    spec = spec_for(1, (1, 1, 1), (64, 1, 1))
    reqs = [Request({"out": np.zeros(1, np.uint32)}, 64, 0x5A, s) for s in (1, 2)]
    # a launch this small is not worth comparing (converge.attempt's cost test): lift it,
    # so that only the watch decides
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 0.0)
    converge._ENTRIES.clear()
    got, full, how = _outcome(cand, k0, spec, reqs)
    assert how == "declined"
    _same(got, full)
    mine = int(full[0].outputs["out"][0])
    theirs = int(launch_many(k0, spec, reqs)[0].outputs["out"][0])
    assert mine != theirs
    # the guard is what stops it: without the watch the checkpoint is taken
    converge._ENTRIES.clear()
    monkeypatch.setattr(Memory, "_watched", lambda self, addrs, size: None)
    got, _, how = _outcome(cand, k0, spec, reqs)
    assert how == "converged" and int(got[0].outputs["out"][0]) == theirs != mine


def _paused(name: str):
    spec = load_spec(KERNELS / name, "small")
    emu = emulator_for(spec.code_object.read_bytes())
    run = make_pass(emu, spec, corpus_requests(spec), None, None)[0]
    run.stop_at = converge.leaders(run.img)[1]
    run.run()
    assert run.paused
    return run


def test_the_comparison_sees_every_kind_of_state_and_leaves_out_only_what_is_not_state():
    a = _paused("softmax")
    b = converge._copy_pass(a)
    assert converge.differ(a, b) is None
    # what is not machine state: the trace, the step counter, the time limit, the code
    b.trace.append((0, None))
    b.steps += 5
    b.deadline = 1.0
    cut = converge.code_cut(b.launches[0].mem)
    b.launches[0].mem.heap[cut] ^= 1
    assert converge.differ(a, b) is None
    edits = [
        ("a VGPR lane", lambda p: p.st.v.__setitem__((0, 3, 7), p.st.v[0, 3, 7] ^ 1)),
        ("an SGPR", lambda p: p.st.s.__setitem__((5, 0), p.st.s[5, 0] ^ 1)),
        ("SCC", lambda p: p.st.scc.__setitem__(2, ~p.st.scc[2])),
        ("an LDS byte", lambda p: p.st.lds.__setitem__(9, p.st.lds[9] ^ 1)),
        ("memory below the code", lambda p: p.launches[3].mem.heap.__setitem__(
            cut - 1, p.launches[3].mem.heap[cut - 1] ^ 1)),
        ("an out-of-contract note", lambda p: p.launches[1].mem.poison_reads.append(
            {"what": "x", "address": 0, "byte_address": 0, "lanes": 1})),
        ("instructions used", lambda p: p.used.__setitem__(0, p.used[0] + 1)),
        ("a launch's clock", lambda p: setattr(p.launches[2], "clock", p.launches[2].clock + 1)),
        ("a barrier count", lambda p: p.arrived.__setitem__(0, p.arrived[0] + 1)),
    ]
    for what, edit in edits:
        c = converge._copy_pass(a)
        edit(c)
        assert converge.differ(a, c) is not None, what


def test_group_order_and_float_bits_count():
    assert converge.differ({1: 0, 2: 0}, {2: 0, 1: 0}) is not None
    assert converge.differ(0.0, -0.0) is not None
    assert converge.differ(float("nan"), float("nan")) is None
    assert converge.differ(np.float32(1), np.float64(1)) is not None
    assert converge.differ(len, abs) is not None
    assert converge.differ(object(), object()) is not None     # a type it cannot look into


def test_stopping_at_checkpoints_changes_no_result():
    """The pass stopped at every block leader in turn and resumed gives what it gives
    run straight through: the moments are pauses, not another schedule."""
    spec = load_spec(KERNELS / "softmax", "small")
    emu = emulator_for(spec.code_object.read_bytes())
    reqs = corpus_requests(spec)
    straight = launch_many(emu, spec, reqs)
    run, launches, _ = make_pass(emu, spec, reqs, None, None)
    for c in converge.leaders(run.img).tolist()[1:]:
        run.stop_at = c
        run.run()
    run.stop_at = batch._INF
    run.run()
    run.count()
    stopped = batch.results(run, spec, launches, reqs, run.used, 0.0)
    _same(stopped, straight)


def test_the_differential_verdict_is_the_same_with_and_without_convergence(monkeypatch,
                                                                         always_compare):
    from asmevo.verify.evaluate import _run_differential
    data, _ = _softmax_swap(23)
    ctx = EvalContext(spec_path=str(KERNELS / "softmax"), size="small", timing="none",
                      isolate=False)
    before = converge.STATS["converged"]
    with_it = _run_differential(ctx, data)
    assert converge.STATS["converged"] > before
    monkeypatch.setattr(converge, "attempt", lambda *a, **k: None)
    without = _run_differential(ctx, data)
    assert with_it == without and with_it.equal


def test_a_note_may_name_a_changed_rows_address_on_each_side_and_nothing_else():
    note = {"what": "kernarg segment bytes 36..51, past its 36-byte contract",
            "address": 0x1708, "byte_address": 0x7F00_0002_B024, "lanes": 64}
    moved = ({0x1700, 0x1708}, {0x1700, 0x1708})
    other = dict(note, address=0x1700)
    assert converge._notes([note], [other], "n", moved) is None
    assert converge._notes([note], [other], "n", ({0x1708}, {0x1708})) is not None
    assert converge._notes([note], [dict(other, lanes=63)], "n", moved) is not None
    assert converge._notes([note], [note, note], "n", moved) is not None


def test_a_pass_too_large_to_copy_is_never_compared(monkeypatch):
    """No checkpoint: declined whatever a comparison would cost, and not counted as the
    cost test's (declined_cost), though that test would decline it too."""
    data, st = _softmax_swap(2)
    spec = load_spec(KERNELS / "softmax", "small")
    monkeypatch.setattr(converge, "MAX_SNAPSHOT_BYTES", 1 << 20)
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 1e6)
    converge._ENTRIES.clear()
    before = converge.STATS["declined_cost"]
    got, full, how = _outcome(emulator_for(data), emulator_for(st.k0_bytes), spec,
                              corpus_requests(spec))
    assert how == "declined" and converge.STATS["declined_cost"] == before
    assert [e.why for e in converge._ENTRIES.values()] == \
        ["the pass's state is too large to copy"] * len(converge._ENTRIES)
    _same(got, full)
    converge._ENTRIES.clear()


def test_a_comparison_that_costs_more_than_it_saves_is_not_made(monkeypatch):
    """The cost test: with the comparison priced above the pass it would save, the
    candidate runs in full (and gives the same results)."""
    data, st = _softmax_swap(2)
    spec = load_spec(KERNELS / "softmax", "small")
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 1e6)
    before = converge.STATS["declined_cost"]
    got, full, how = _outcome(emulator_for(data), emulator_for(st.k0_bytes), spec,
                              corpus_requests(spec))
    assert how == "declined"
    assert converge.STATS["declined_cost"] == before + 1     # counted as the cost test's
    _same(got, full)
