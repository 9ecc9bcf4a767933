"""K0's verification state for one :class:`~asmevo.verify.context.EvalContext`, as one
value: the :class:`Baseline` every candidate of that context is checked and timed
against.

It is built once per process (:func:`k0_state`, a memo by context): K0 loaded and
recovered, its reference runs at the size under check and the launches a check covers
(:func:`asmevo.verify.launches.coverage`). What only some contexts need is computed
on first use and then kept in the value: the inputs candidates are timed on
(:meth:`Baseline.timing_inputs`), K0's run on them (:meth:`Baseline.timing_reference`)
and K0's modeled time (``k0_time``, :func:`asmevo.verify.timing.k0_modeled`). A forked
worker inherits the parent's Baseline with whatever it holds by then.

The flow goes one way: :mod:`asmevo.verify.evaluate` gets the Baseline and passes it
down; :meth:`Baseline.check` runs the differential (:mod:`asmevo.verify.launches`,
:mod:`asmevo.verify.differential`, :mod:`asmevo.verify.timing`), none of which knows
about contexts.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from asmevo.files import read_input
from asmevo.memo import MISS, Memo
from asmevo.targets.amdgpu.processors import DEFAULT
from asmevo.verdict import Verdict
from asmevo.verify.context import EvalContext
from asmevo.verify.errors import VerifyError


@dataclass
class TimingInputs:
    """K0 at the timing size: the spec and the inputs candidates are timed (and checked
    once more) on."""

    spec: Any
    values: dict


@dataclass(eq=False)
class Baseline:
    """What every candidate of ``ctx`` is judged against: K0 (bytes, loaded, recovered),
    the device, and K0's results on every launch a check covers (``coverage``)."""

    ctx: EvalContext
    target: Any                         # asmevo.targets.Target
    spec: Any                           # the launch at the size under check
    k0_bytes: bytes
    code_object: Any
    program: Any
    device: Any
    coverage: Any                       # asmevo.verify.launches.Coverage
    k0_time: float | None = None        # K0's modeled cycles at the timing size
    _timing: TimingInputs | None = field(default=None, repr=False)
    _timing_ref: Any = field(default=MISS, repr=False)
    _barriers: bool | None = field(default=None, repr=False)

    @property
    def reference(self):
        """K0's runs at the size under check (:class:`asmevo.verify.differential.Reference`)."""
        return self.coverage.main

    @property
    def barriers(self) -> bool:
        """K0 synchronizes waves: candidates get the race-exposing serial runs."""
        if self._barriers is None:
            self._barriers = self.target.synchronizes(self.program, self.spec.kernel)
        return self._barriers

    def k0_problems(self) -> list[str]:
        """What the static checks report in K0's kernel and its callees."""
        return self.target.k0_problems(self.program, self.spec.kernel)

    def timing_inputs(self) -> TimingInputs:
        """K0 at the timing size: its spec and the inputs candidates are timed on."""
        if self._timing is None:
            from asmevo.launch.spec import load_spec
            from asmevo.verify.inputs import input_sets
            ctx = self.ctx
            spec = load_spec(ctx.spec_path, ctx.timing_size) if ctx.sizes_differ \
                else self.spec
            self._timing = TimingInputs(spec, input_sets(spec, self.timing_seed,
                                                         special=False)[0][1])
        return self._timing

    @property
    def timing_seed(self) -> tuple[int]:
        return (self.ctx.seeds or (0,))[:1]

    def timing_reference(self):
        """K0's run on the timing inputs: what the check at ``timing_size`` compares
        with; None where the launch is larger than the emulator runs whole (then
        checked on sampled workgroups instead: :func:`asmevo.verify.timing.sampled_check`).
        Computed only where candidates are checked (the worker, or a forking parent)."""
        if self._timing_ref is MISS:
            from asmevo.verify.differential import reference_runs
            from asmevo.verify.timing import too_big_to_emulate
            ts = self.timing_inputs()
            if not self.device.measured and too_big_to_emulate(ts.spec):
                self._timing_ref = None
            else:
                self._timing_ref = reference_runs(
                    self.device, self.k0_bytes, ts.spec, approx_variants=(),
                    sets=[(f"seed{self.timing_seed[0]}", ts.values)])
        return self._timing_ref

    def check(self, data: bytes) -> Verdict:
        """Every launch of the check (:func:`asmevo.verify.launches.check`: every input set
        at ``size``, the family members, workgroup orders, overlaps); then, if it is
        equal, one input set at ``timing_size``."""
        from asmevo.verify.launches import check
        ctx = self.ctx
        verdict = check(self.device, self.coverage, data, self.spec, runs=ctx.runs,
                        barriers=self.barriers)
        if not (verdict.equal and ctx.sizes_differ):
            return verdict
        big = self._check_at_timing_size(data)
        if not big.equal:
            return replace(big, reason=f"at size {ctx.timing_size}: {big.reason}",
                           details=big.details | {"size": ctx.timing_size})
        return replace(verdict, reason=f"{verdict.reason}; and 1 input set at size "
                       f"{ctx.timing_size}", details=verdict.details | {
                           "timing_size": ctx.timing_size})

    def _check_at_timing_size(self, data: bytes) -> Verdict:
        from asmevo.verify.differential import differential
        ts, ref = self.timing_inputs(), self.timing_reference()
        if ref is None:         # larger than the emulator runs whole: a sampled subset
            from asmevo.verify.timing import sampled_check
            return sampled_check(self.k0_bytes, data, ts.spec, ts.values)
        return differential(self.device, ref, data, ts.spec, runs=1, barriers=False)

    def prepare(self) -> None:
        """Ahead of the first candidate, what the device keeps of K0's passes over the
        launches a check makes (:func:`asmevo.verify.launches.prepare`)."""
        from asmevo.verify.launches import prepare
        prepare(self.device, self.coverage, self.spec, runs=self.ctx.runs,
                barriers=self.barriers)


def build(ctx: EvalContext) -> Baseline:
    """K0's state for ``ctx``, from scratch: load and recover K0, run it on every input
    set and on every launch the check covers."""
    from asmevo.launch.spec import family_space, load_spec
    from asmevo.runtime.registry import get_device
    from asmevo.targets import get_target
    from asmevo.verify.differential import reference_runs
    from asmevo.verify.launches import coverage

    target = get_target(ctx.target)
    spec = load_spec(ctx.spec_path, ctx.size)
    path = Path(ctx.code_object) if ctx.code_object else spec.code_object_for(ctx.isa, DEFAULT)
    data = read_input(path, what="code object")
    co = target.load(data, path=str(path))
    co.kernel(spec.kernel)
    device = get_device(ctx.device)
    try:
        ref = reference_runs(device, data, spec, seeds=ctx.seeds, special=ctx.special_values)
    except VerifyError as exc:
        raise exc.in_file(str(path)) from None
    space = family_space(ctx.spec_path, ctx.size) if ctx.family else None
    cover = coverage(device, data, spec, ref, space, seed=ctx.family_seed,
                     special=ctx.special_values,
                     restrict=target.restrict_buffers(co, spec.kernel, spec))
    return Baseline(ctx, target, spec, data, co, target.recover(co), device, cover)


# this process's Baselines, by context: a worker builds each once, not per candidate
BASELINES: Memo[Baseline] = Memo("verify.baselines", 8, evict="lru")


def k0_state(ctx: EvalContext) -> Baseline:
    """``ctx``'s :class:`Baseline` in this process, built on first use."""
    got = BASELINES.get(ctx)
    if got is None:
        got = BASELINES.put(ctx, build(ctx))
    return got
