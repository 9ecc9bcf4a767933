"""The batched pass (asmevo.emu.batch) against launches run alone, field by field.

The serial launches of a check run in lockstep with the others when
asmevo.emu.racecheck proves their waves do not communicate; a kernel whose waves
race through LDS is refused that proof and runs serially, with the same results."""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.emu import Emulator
from asmevo.emu import batch
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
