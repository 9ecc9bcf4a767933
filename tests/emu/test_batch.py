"""The batched pass (asmevo.emu.run.batch) against launches run alone, field by field.

The serial launches of a check run in lockstep with the others when
asmevo.emu.machine.racecheck proves their waves do not communicate; a kernel whose waves
race through LDS is refused that proof and runs serially, with the same results."""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.emu import Emulator
from asmevo.emu.run import batch
from asmevo.launch.spec import load_spec
from asmevo.verify.evaluate import EvalContext, build_candidate, k0_state
from experiments.bench_fastpath import compare, corpus_requests
from tests.conftest import KERNELS


def _check(emu, spec) -> dict:
    before = dict(batch.STATS)
    took, bad = compare(emu, spec, corpus_requests(spec))
    assert took and bad == []
    return {k: batch.STATS[k] - before[k] for k in before}


def test_race_free_serial_launches_run_in_lockstep_and_agree():
    spec = load_spec(KERNELS / "softmax", "small")
    delta = _check(Emulator(spec.code_object), spec)
    assert delta["speculated"] == 1 and delta["conflicts"] == 0


def test_lds_race_is_refused_the_lockstep_proof_and_agrees():
    """reduce_sum without its first barrier: waves read LDS slots other waves write in
    the same interval, so the serial launches must run serially (and differ from the
    lockstep ones, which is what the verifier looks for)."""
    ctx = EvalContext(spec_path=str(KERNELS / "reduce_sum"), size="small", timing="none")
    fn = k0_state(ctx).program.function("reduce_sum")
    i = next(i for i, x in enumerate(fn.instructions) if x.mnemonic == "s_barrier")
    data, verdict = build_candidate(ctx, (Edit("reduce_sum", i, i + 1, ()),))
    assert verdict is None
    spec = load_spec(KERNELS / "reduce_sum", "small")
    batch._CONFLICTS.clear()
    delta = _check(Emulator(data), spec)
    assert delta["conflicts"] == 1 and delta["speculated"] == 0


def test_kernel_reading_kernarg_slack_is_proven_too_and_agrees():
    """matmul_tiled loads a dwordx4 past its kernarg segment in its prologue: the serial
    launch alone notes it from its first wave slot's group, and so does the lockstep
    run (that slot's waves first, while all waves are still one group)."""
    spec = load_spec(KERNELS / "matmul_tiled", "small")
    batch._CONFLICTS.clear()
    delta = _check(Emulator(spec.code_object), spec)
    assert delta["speculated"] == 1 and delta["conflicts"] == 0


def test_reused_set_up_gives_every_field_again():
    """A second check of the same object, and a check of another candidate laid out like
    the first (the rebuild's layout), start from a copy of the first check's set-up
    (asmevo.emu.run.launchcache) with their own code written in."""
    from asmevo.emu.run import launchcache
    spec = load_spec(KERNELS / "softmax", "small")
    ctx = EvalContext(spec_path=str(KERNELS / "softmax"), size="small", timing="none")
    ins = k0_state(ctx).program.function("softmax").instructions
    swaps = [j for j in range(len(ins) - 1) if ins[j].mnemonic == "v_mov_b32_e32"
             and ins[j + 1].mnemonic.startswith("s_")][:2]
    datas = []
    for j in swaps:
        data, verdict = build_candidate(ctx, (Edit("softmax", j, j + 2, (ins[j + 1].text,
                                                                          ins[j].text)),))
        assert verdict is None
        datas.append(data)
    launchcache._CACHE.clear()
    first = Emulator(datas[0])
    _check(first, spec)
    assert len(launchcache._CACHE) == 1
    _check(first, spec)
    _check(Emulator(datas[1]), spec)
    assert len(launchcache._CACHE) == 1      # both reused the first check's set-up
    # the copy's memory is the one a fresh set-up of the second candidate lays out
    from asmevo.emu.run.dispatch import setup
    from asmevo.emu.run.launch import _vgpr_file_size
    emu = Emulator(datas[1])
    co = emu.program.source
    k = co.kernel("softmax")
    reqs = corpus_requests(spec)
    launches, _ = launchcache.get(launchcache.key(co, k, spec, _vgpr_file_size(
        emu.image_for(k), k), reqs), co, k)
    for ln, r in zip(launches, reqs):
        fresh = setup(co, k, spec, r.inputs, guard_bytes=r.guard_bytes,
                      guard_fill=r.guard_fill, poison_seed=r.garbage_seed)
        assert ln.mem.heap.tobytes() == fresh.mem.heap.tobytes()


def test_recycled_buffers_leave_every_pass_its_own_state():
    """A pass copies its set-up into the buffers of one that finished
    (launchcache.recycle): the results of a pass stay what they were while later
    passes reuse its buffers, every pass gives what a pass from fresh buffers gives,
    and no buffer is handed to two copies at once."""
    from asmevo.emu.run import launchcache
    from asmevo.emu.run.batch import launch_many
    from experiments.bench_fastpath import differences
    spec = load_spec(KERNELS / "softmax", "small")
    emu = Emulator(spec.code_object)
    reqs = corpus_requests(spec)
    launchcache._CACHE.clear()
    launchcache._SPARE.clear()
    first = launch_many(emu, spec, reqs)
    kept = [{k: v.copy() for k, v in r.outputs.items()} for r in first]
    assert launchcache._SPARE         # the first pass's buffers, now spare
    spare = {id(b) for bufs in launchcache._SPARE.values() for b in bufs}
    from asmevo.emu.run.launch import _vgpr_file_size
    co = emu.program.source
    k = co.kernel(spec.kernel)
    launches, st = launchcache.get(launchcache.key(
        co, k, spec, _vgpr_file_size(emu.image_for(k), k), reqs), co, k)
    used = [ln.mem.heap for ln in launches] + [st.v]
    assert {id(a) for a in used} <= spare and len({id(a) for a in used}) == len(used)
    for _ in range(2):
        again = launch_many(emu, spec, reqs)
        launchcache._SPARE.clear()
        fresh = launch_many(emu, spec, reqs)
        for a, b, c in zip(again, fresh, first):
            assert differences(a, b) == [] and differences(a, c) == []
    for r, k in zip(first, kept):
        assert all(r.outputs[n].tobytes() == k[n].tobytes() for n in k)   # bits (NaNs)


def test_members_share_instructions_with_their_own_nan_choice():
    """vector_add on inputs NaN in both operands (other payloads): member 1 picks the
    propagated NaN by a hash, member 0 the first operand's; in one pass, the add runs
    once for the waves of both members and each launch gets its member's bits."""
    import numpy as np
    from asmevo.emu.run.batch import Request
    spec = load_spec(KERNELS / "vector_add", "small")
    emu = Emulator(spec.code_object)
    n = spec.buffers[0].count
    rng = np.random.default_rng(7)
    x = (0x7FC00000 | rng.integers(1, 1 << 22, n)).astype(np.uint32).view(np.float32)
    y = (0xFFC00000 | rng.integers(1, 1 << 22, n)).astype(np.uint32).view(np.float32)
    x[::3] = 1.5
    inputs = {spec.buffers[0].name: x, spec.buffers[1].name: y}
    reqs = [Request(inputs, 64, 0x5A, 11, "lockstep", 0), Request(inputs, 64, 0xA5, 10,
                                                                  "lockstep", 1)]
    took, bad = compare(emu, spec, reqs)
    assert took and bad == []
    out = spec.buffers[2].name
    alone = [emu.launch(spec, inputs, garbage_seed=11, approx_variant=m).outputs[out]
             for m in (0, 1)]
    assert not np.array_equal(alone[0].view(np.uint32), alone[1].view(np.uint32))
