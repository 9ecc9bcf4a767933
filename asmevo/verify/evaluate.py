"""One candidate, start to finish: edits -> static gate -> build -> differential run -> timing.

The family-specific steps (loading and recovering K0, applying edits, the static
gate, building) go through the :class:`asmevo.targets.Target` that
``EvalContext.target`` names; the differential run and timing talk only to the
:class:`asmevo.runtime.device.Device`.

:func:`evaluate_candidate` is a pure function of a picklable
:class:`EvalContext` and an edit list, so the engine can ship it to joblib or
Dask workers. Expensive per-K0 state (the recovered program, K0's reference
runs, K0's timing) is computed once per process and cached by content.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.verify.verdict import Evaluation, Timing, Verdict


class VerifyError(AsmevoError):
    """A verification request that cannot be carried out as configured."""


@dataclass(frozen=True)
class EvalContext:
    """Everything an evaluation needs, as plain picklable values."""

    spec_path: str
    size: str = "small"
    code_object: str | None = None      # K0 path; default: the spec's
    device: str = "emulator"
    timing: str = "modeled"             # modeled | measured | none (verify only)
    seeds: tuple[int, ...] = (0, 1, 2)
    special_values: bool = True
    runs: int = 2                       # candidate runs per input set (nondeterminism)
    timeout: float = 60.0               # wall clock per candidate (child process)
    isolate: bool = True
    repetitions: int = 20               # measured timing
    warmup: int = 3
    isa: str | None = None              # e.g. "gfx90a" to pick the spec's other object
    target: str = "amdgpu"              # ISA family: asmevo.targets.REGISTRY key

    def __post_init__(self):
        if self.timing not in ("modeled", "measured", "none"):
            raise VerifyError(f"timing must be modeled, measured or none, not {self.timing!r}")
        if self.timeout <= 0 or self.runs < 1:
            raise VerifyError("timeout must be positive and runs at least 1")
        if not self.seeds and not self.special_values:
            raise VerifyError("no input sets: give seeds or enable special values")

    @property
    def key(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:16]


@dataclass
class _K0State:
    spec: object
    k0_bytes: bytes
    code_object: object
    program: object
    device: object
    reference: object
    k0_time: float | None = None
    k0_noise: float = 0.0
    extra: dict = field(default_factory=dict)


@lru_cache(maxsize=8)
def _state(ctx: EvalContext) -> _K0State:
    from asmevo.runtime.device import get_device
    from asmevo.targets import get_target
    from asmevo.verify.differential import reference_runs
    from asmevo.verify.spec import load_spec

    target = get_target(ctx.target)
    spec = load_spec(ctx.spec_path, ctx.size)
    path = Path(ctx.code_object) if ctx.code_object else spec.code_object_for(ctx.isa)
    data = path.read_bytes()
    co = target.load(data, path=str(path))
    co.kernel(spec.kernel)
    device = get_device(ctx.device)
    ref = reference_runs(device, data, spec, seeds=ctx.seeds, special=ctx.special_values)
    return _K0State(spec, data, co, target.recover(co), device, ref,
                    extra={"target": target})


def k0_state(ctx: EvalContext) -> _K0State:
    return _state(ctx)


def _target(st: _K0State):
    return st.extra["target"]


def build_candidate(ctx: EvalContext, edits: tuple[Edit, ...]) -> tuple[bytes | None, Verdict | None]:
    """The candidate's code object bytes, or the verdict that stopped it before running."""
    _, data, verdict = _build(ctx, edits)
    return data, verdict


def _build(ctx: EvalContext, edits: tuple[Edit, ...]):
    """(program, bytes, None) for a candidate that builds, else (program?, None, verdict)."""
    st = _state(ctx)
    return _target(st).candidate(st.program, tuple(edits), st.code_object)


def _static_gate(program, st: _K0State) -> Verdict | None:
    """The family's static gate (AMDGPU: hazard wait states and waitcnt sufficiency)."""
    return _target(st).static_gate(program, st.code_object)


def _abi_gate(st: _K0State, data: bytes) -> Verdict | None:
    target = _target(st)
    try:
        diffs = target.abi_diff(st.code_object, target.load(data, path="candidate"))
    except AsmevoError as exc:
        return Verdict("build", f"candidate does not load: {exc}")
    if diffs:
        return Verdict("abi", str(diffs[0]), {"differences": [str(d) for d in diffs]})
    return None


def _run_differential(ctx: EvalContext, data: bytes) -> Verdict:
    from asmevo.verify.differential import differential

    st = _state(ctx)
    return differential(st.device, st.reference, data, st.spec, runs=ctx.runs,
                        barriers=_has_barrier(st))


def _differential_verdict(ctx: EvalContext, data: bytes) -> Verdict:
    """The differential run, in a child process with a wall-clock limit when isolated.

    On the emulator the child is forked (it inherits K0's cached reference runs);
    on a GPU it is spawned, since a GPU context does not survive ``fork``, and
    redoes K0's reference runs itself (a few launches per candidate).
    """
    if not ctx.isolate:
        return _run_differential(ctx, data)
    from asmevo.verify.isolate import run_isolated
    method = "fork" if ctx.device == "emulator" else "spawn"
    return run_isolated(_run_differential, ctx, data, timeout=ctx.timeout, method=method)


def _has_barrier(st: _K0State) -> bool:
    """K0 synchronizes waves: candidates get the race-exposing serial runs."""
    return _target(st).synchronizes(st.program, st.spec.kernel)


def _timing(ctx: EvalContext, data: bytes) -> Timing | None:
    if ctx.timing == "none":
        return None
    from asmevo.verify.timing import time_candidate
    return time_candidate(ctx, _state(ctx), data)


def evaluate_candidate(ctx: EvalContext, edits: tuple[Edit, ...]) -> Evaluation:
    """Build, gate, verify and (when equal) time one candidate."""
    t0 = time.perf_counter()
    program, data, verdict = _build(ctx, tuple(edits))
    sha = hashlib.sha256(data).hexdigest() if data is not None else _edits_sha(edits)
    if verdict is None:
        verdict = _abi_gate(_state(ctx), data)
    if verdict is None:
        verdict = _differential_verdict(ctx, data)
    timing = _timing(ctx, data) if verdict.equal else None
    if timing is not None and timing.label == "modeled":
        verdict = replace(verdict, details=verdict.details | {
            "hot_windows": _hot_windows(ctx, program, data)})
    return Evaluation(sha, verdict, timing, time.perf_counter() - t0)


HOT_WINDOWS = 8


def _hot_windows(ctx: EvalContext, program, data: bytes) -> list[list]:
    """The candidate's hottest windows under the timing model, as plain lists.

    They travel in the verdict's details, so the archive keeps them and an
    operator working on this candidate later edits where its time goes (the
    engine itself never profiles anything).
    """
    from asmevo.profile import hot_windows, profile_launch
    from asmevo.verify.inputs import input_sets

    st = _state(ctx)
    values = input_sets(st.spec, ctx.seeds[:1], special=False)[0][1]
    prof = profile_launch(data, st.spec, values)
    wins = hot_windows(program, prof, top=HOT_WINDOWS, functions=[st.spec.kernel])
    return [[w.function, w.start, w.end, round(w.share, 4)] for w in wins]


def evaluate_code(ctx: EvalContext, data: bytes) -> Evaluation:
    """Verify and time a ready-built code object against K0 (``asmevo verify``)."""
    t0 = time.perf_counter()
    sha = hashlib.sha256(data).hexdigest()
    verdict = _abi_gate(_state(ctx), data)
    if verdict is None:
        st = _state(ctx)
        verdict = _target(st).code_gate(data, st.code_object)
    if verdict is None:
        verdict = _differential_verdict(ctx, data)
    timing = _timing(ctx, data) if verdict.equal else None
    return Evaluation(sha, verdict, timing, time.perf_counter() - t0)


def _edits_sha(edits) -> str:
    from asmevo.edits import edits_to_json
    return "edits:" + hashlib.sha256(edits_to_json(tuple(edits)).encode()).hexdigest()
