"""Launches a check makes beyond lockstep: workgroups in an order, buffers laid over each
other, and stores whose lanes write one address with different values. Each alone and
in one batched pass (where the trackers prove a workgroup-ordered launch may run in
lockstep, and where they refuse it), every result field the same."""
import numpy as np
import pytest

from asmevo.emu.run import batch
from asmevo.emu.errors import LaunchError
from asmevo.emu.run.launch import Emulator, workgroup_order
from asmevo.launch.spec import ArgSpec, LaunchSpec, load_spec, make_inputs
from tests.conftest import KERNELS
from tests.emu.asmdsl import build_kernel

# every workgroup stores its id to out[0] (all lanes the same value): the last one wins
LAST_WRITER = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32_e32 v1, s2
    v_mov_b32_e32 v2, 0
    global_store_dword v2, v1, s[4:5]
    s_waitcnt vmcnt(0)
"""
# every lane stores its own id to out[0]: one address, 64 different values
LANES_TO_ONE = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32_e32 v2, 0
    global_store_dword v2, v0, s[4:5]
    s_waitcnt vmcnt(0)
"""


def _spec(grid: int, count: int = 64) -> LaunchSpec:
    return LaunchSpec(name="t", kernel="k", code_object=None, grid=(grid, 1, 1),
                      block=(64, 1, 1),
                      args=(ArgSpec(name="out", kind="buffer", dtype="uint32", count=count,
                                    output=True),))


def _run(body: str, grid: int, **kw):
    emu = Emulator(build_kernel(body, buffers=1))
    return emu.launch(_spec(grid), {}, **kw)


@pytest.mark.parametrize("order", ["ascending", "descending", "shuffle:7"])
def test_workgroups_run_one_at_a_time_in_the_order(order):
    r = _run(LAST_WRITER, 5, order=order)
    assert r.ok and r.outputs["out"][0] == workgroup_order(order, 5)[-1]
    assert not r.lane_conflicts         # one value per store: defined


def test_an_unknown_order_is_refused():
    with pytest.raises(LaunchError, match="unknown workgroup order"):
        _run(LAST_WRITER, 2, order="sideways")
    with pytest.raises(LaunchError, match="not with the serial schedule"):
        _run(LAST_WRITER, 2, order="ascending", schedule="serial")


def test_lanes_storing_different_values_to_one_address_are_noted():
    r = _run(LANES_TO_ONE, 1)
    assert r.ok and len(r.lane_conflicts) == 1
    assert "64 lanes of one wave" in r.lane_conflicts[0]
    assert "global_store_dword" in r.lane_conflicts[0]


def test_a_corpus_kernel_makes_no_lane_conflict():
    spec = load_spec(KERNELS / "vector_add", "small")
    r = Emulator(spec.code_object).launch(spec, make_inputs(spec, 0))
    assert r.ok and r.lane_conflicts == []


def test_an_output_laid_over_its_input_computes_in_place():
    spec = load_spec(KERNELS / "vector_add", "small")
    vals = make_inputs(spec, 0)
    emu = Emulator(spec.code_object)
    r = emu.launch(spec, vals, aliases={"c": ("a", 0)}, guard_bytes=64, guard_fill=0x5A)
    assert r.ok
    np.testing.assert_array_equal(r.outputs["c"], vals["a"] + vals["b"])
    np.testing.assert_array_equal(r.outputs["a"], r.outputs["c"])     # one memory
    assert set(r.guards["a"][0]) == {0x5A} and r.guards["c"] == (b"", b"")
    alone = emu.launch(spec, vals)
    np.testing.assert_array_equal(alone.outputs["c"], r.outputs["c"])


def test_a_shifted_overlap_depends_on_the_workgroup_order():
    """c = a + 16 bytes: a workgroup's last stores land in the next one's inputs, so the
    result depends on which runs first (outside the kernel's contract)."""
    spec = load_spec(KERNELS / "vector_add", "small")
    vals = make_inputs(spec, 0)
    emu = Emulator(spec.code_object)
    up = emu.launch(spec, vals, aliases={"c": ("a", 16)}, order="ascending")
    down = emu.launch(spec, vals, aliases={"c": ("a", 16)}, order="descending")
    assert up.ok and down.ok and not np.array_equal(up.outputs["c"], down.outputs["c"])


@pytest.mark.parametrize("alias", [{"c": ("c", 0)}, {"c": ("a", -4)}, {"c": ("z", 0)},
                                   {"c": ("a", 0), "a": ("b", 0)}])
def test_a_bad_alias_is_refused(alias):
    spec = load_spec(KERNELS / "vector_add", "small")
    with pytest.raises(LaunchError, match="bad alias"):
        Emulator(spec.code_object).launch(spec, make_inputs(spec, 0), aliases=alias)


def _fields(r):
    return (r.status, r.message, {k: v.tobytes() for k, v in r.outputs.items()}, r.guards,
            r.poison_reads, r.lane_conflicts, r.instructions_executed, r.lane_instructions,
            {k: (p.counts.tobytes(), p.lanes.tobytes()) for k, p in r.profile.items()})


def _batched_against_alone(code: bytes, spec, requests):
    emu = Emulator(code)
    out = batch.launch_many(emu, spec, requests)
    assert out is not None
    for q, got in zip(requests, out):
        alone = emu.launch(q.spec or spec, q.inputs, guard_bytes=q.guard_bytes,
                           guard_fill=q.guard_fill,
                           garbage_seed=q.garbage_seed, schedule=q.schedule,
                           aliases={n: (b, o) for n, b, o in q.aliases} or None,
                           order=q.order)
        assert _fields(got) == _fields(alone)
    return out


def test_ordered_and_overlapping_launches_batch_exactly():
    """vector_add's workgroups share no byte: the trackers let its ordered launches run in
    lockstep (speculated), and the overlapping ones keep their own memory layout."""
    spec = load_spec(KERNELS / "vector_add", "small")
    vals = make_inputs(spec, 0)
    reqs = [batch.Request(dict(vals), 256, 0x5A, 11),
            batch.Request(dict(vals), 256, 0x5A, 11, order="descending"),
            batch.Request(dict(vals), 256, 0x5A, 11, order="shuffle:3"),
            batch.Request(dict(vals), 256, 0x5A, 11, aliases=(("c", "a", 0),)),
            batch.Request(dict(vals), 256, 0x5A, 11, aliases=(("c", "b", 16),))]
    before = dict(batch.STATS)
    _batched_against_alone(spec.code_object.read_bytes(), spec, reqs)
    assert batch.STATS["speculated"] > before["speculated"]


def test_workgroups_that_communicate_run_in_order_in_the_batch():
    """Every workgroup writes out[0]: the tracker refuses the lockstep proof and the pass
    runs each ordered launch's workgroups one at a time, as alone."""
    code = build_kernel(LAST_WRITER, buffers=1)
    spec = _spec(6)
    reqs = [batch.Request({}, 64, 0x5A, 3, order=o)
            for o in ("ascending", "descending", "shuffle:1")]
    out = _batched_against_alone(code, spec, reqs)
    assert [int(r.outputs["out"][0]) for r in out] == \
        [int(workgroup_order(o, 6)[-1]) for o in ("ascending", "descending", "shuffle:1")]


def test_family_members_of_other_grids_share_a_pass():
    """Launches of other specs of one block (family members: other grids, buffer sizes
    and scalars) in one pass, each laid out like the others, every field as alone."""
    from asmevo.launch.family import Member
    from asmevo.launch.spec import family_space
    fs = family_space(KERNELS / "softmax", "small")
    specs = [fs.resolve(Member((("ROWS", r), ("COLS", c)), "t")) for r, c in
             ((1, 7), (3, 9), (5, 255), (2, 513))]
    reqs = []
    for s, seed, sched in zip(specs, (11, 12, 13, 11), ("lockstep", "lockstep", "serial",
                                                          "lockstep")):
        vals = make_inputs(s, 3)
        reqs.append(batch.Request(vals, 256, 0x5A, seed, sched, spec=s))
    before = dict(batch.STATS)
    _batched_against_alone(specs[0].code_object.read_bytes(), specs[0], reqs)
    assert batch.STATS["batched"] > before["batched"]
