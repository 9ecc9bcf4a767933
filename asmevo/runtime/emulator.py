"""The CPU emulator as a Device: every AMD code path runs here without a GPU.

Times from this device are never wall-clock: :meth:`time` returns the timing
model's cycles, labeled *modeled* wherever they are shown.
"""
from __future__ import annotations

import numpy as np

from asmevo.runtime.device import BufferImage, Device, RunResult
from asmevo.launch.spec import LaunchSpec


def _emulator(code: bytes):
    from asmevo.emu.run.launch import emulator_for
    return emulator_for(code)


# run variants: even = lockstep groups (other register garbage per variant);
# 1 / 3 = waves one by one between barriers, lowest / highest wave first
_SCHEDULES = ("lockstep", "serial", "lockstep", "serial_reverse")
GARBAGE_BASE = 0x9E3779B9


def garbage_seed(variant: int) -> int:
    """The emulator's garbage seed of a run variant: variants 0 and 2 (and 1 and 3)
    get complementary bits (see :func:`asmevo.emu.run.dispatch.garbage`), so the
    candidate's two lockstep runs disagree in every undefined bit."""
    pair = (variant % 4) % 2 + 2 * (variant // 4)
    return 2 * (GARBAGE_BASE + pair) + (1 if variant % 4 >= 2 else 0)


class EmulatorDevice(Device):
    targets = ("amdgpu",)
    measured = False

    def __init__(self, max_instructions: int | None = None, time_limit: float | None = 30.0):
        self.name = "emulator"
        self.max_instructions = max_instructions
        self.time_limit = time_limit

    diagnoses = True    # run(..., diagnose=True) says which undefined state a run read
    overlaps = True     # run(..., aliases=...) lays buffers over each other
    orders = True       # run(..., order=...) runs workgroups one at a time in that order
    forks = True        # its state is plain memory: forked workers keep it
    batches = True      # run_many: one wider pass (asmevo.emu.run.batch); prepare_like keeps K0's

    @classmethod
    def check_launch(cls, spec: LaunchSpec) -> None:
        """A launch the emulator cannot hold refused before anything runs."""
        from asmevo.emu.run.launch import check_size
        check_size(spec)

    def run(self, code: bytes, spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
            guard_bytes: int = 256, guard_pattern: int = 0x5A, variant: int = 0,
            diagnose: bool = False, approx_variant: int = 0, aliases: dict | None = None,
            order: str | None = None) -> RunResult:
        """See :meth:`Device.run`. Every variant has its own garbage in undefined
        registers and LDS and its own poison past the kernarg segment; reads of
        memory outside the launch's contract come back in ``details["poison_reads"]``,
        and with ``diagnose`` reads of never-written registers and LDS bytes in
        ``details["undefined_reads"]`` (slow: for explaining a verdict).
        ``approx_variant`` picks the member of the approximate-instruction families.
        ``aliases`` and ``order``: see :meth:`asmevo.emu.run.launch.Emulator.launch`."""
        from asmevo.errors import AsmevoError
        try:
            emu = _emulator(bytes(code))
        except AsmevoError as exc:   # the candidate does not load or decode
            return RunResult("unsupported", str(exc))
        res = emu.launch(spec, buffers, max_instructions=self.max_instructions,
                         time_limit=self.time_limit, guard_bytes=guard_bytes,
                         guard_fill=guard_pattern, garbage_seed=garbage_seed(variant),
                         schedule=_SCHEDULES[variant % 4], diagnose=diagnose,
                         approx_variant=approx_variant, aliases=aliases, order=order)
        return _run_result(spec, res, diagnose)

    def run_many(self, code: bytes, spec: LaunchSpec, runs: list[dict], *,
                 like: bytes | None = None) -> list[RunResult] | None:
        """``[self.run(code, r.pop("spec", spec), **r) for r in runs]`` (a run may name
        another spec of the same launch shape: a family member) from one wider emulator pass
        (:func:`asmevo.emu.run.batch.launch_many`: each result is the one the launch gives
        alone), or None where that pass cannot be used (then call :meth:`run`).
        ``like``: a code object ``code`` differs from in a few rows (K0): where the pass
        meets that object's in one state, it finishes as that object's
        (:mod:`asmevo.emu.run.converge`; the results are the same)."""
        from asmevo.emu.run.batch import batchable, launch_many
        from asmevo.errors import AsmevoError
        try:
            emu = _emulator(bytes(code))
        except AsmevoError:
            return None
        reqs = _requests(runs)
        if len(reqs) < 2 or not all(batchable(emu, spec, q) for q in reqs):
            return None
        other = None
        if like is not None and bytes(like) != bytes(code):
            try:
                other = _emulator(bytes(like))
            except AsmevoError:
                other = None
        out = launch_many(emu, spec, reqs, max_instructions=self.max_instructions,
                          time_limit=self.time_limit, like=other)
        return None if out is None else [_run_result(r.get("spec") or spec, res, False)
                                         for r, res in zip(runs, out)]

    def prepare_like(self, code: bytes, spec: LaunchSpec, runs: list[dict]) -> None:
        """Ahead of the candidates of K0 (``code``): what :meth:`run_many` with ``like=code``
        keeps of K0's pass over these runs (asmevo.emu.run.converge's checkpoints)."""
        from asmevo.emu.run.batch import batchable, prepare_like
        from asmevo.errors import AsmevoError
        try:
            emu = _emulator(bytes(code))
        except AsmevoError:
            return
        reqs = _requests(runs)
        if len(reqs) >= 2 and all(batchable(emu, spec, q) for q in reqs):
            prepare_like(emu, spec, reqs, max_instructions=self.max_instructions)

    def time(self, codes: list[bytes], spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
             warmup: int = 0, repetitions: int = 1) -> list[list[float]]:
        from asmevo.timing.model import model_launch
        return [[float(model_launch(c, spec, buffers).cycles)] * repetitions for c in codes]


def _requests(runs: list[dict]) -> list:
    """The emulator's launch requests of :meth:`EmulatorDevice.run_many`'s runs."""
    from asmevo.emu.run.batch import Request
    return [Request(r["buffers"], r.get("guard_bytes", 256), r.get("guard_pattern", 0x5A),
                    garbage_seed(r.get("variant", 0)), _SCHEDULES[r.get("variant", 0) % 4],
                    r.get("approx_variant", 0),
                    tuple((n, b, o) for n, (b, o) in (r.get("aliases") or {}).items()),
                    r.get("order"), r.get("spec")) for r in runs]


def _run_result(spec: LaunchSpec, res, diagnose: bool) -> RunResult:
    """The device's view of one emulator launch result."""
    out = {}
    for a in spec.buffers:
        before, after = res.guards.get(a.name, (b"", b""))
        out[a.name] = BufferImage(res.outputs[a.name], before, after)
    details = {k: v for k, v in (("kernel", res.kernel), ("address", res.address),
                                 ("byte_address", res.byte_address)) if v is not None}
    details["instructions"] = res.instructions_executed
    if res.poison_reads:
        details["poison_reads"] = res.poison_reads
    if res.lane_conflicts:
        details["lane_conflicts"] = res.lane_conflicts
    if diagnose:
        details["undefined_reads"] = res.undefined_reads
    return RunResult(res.status, res.message, out, details, res.profile)
