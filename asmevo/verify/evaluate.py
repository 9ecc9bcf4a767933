"""One candidate, start to finish, on a device: the state the pipeline's stages need.

The stages themselves (apply, gate, build, abi, differential, timing) are
:mod:`asmevo.verify.pipeline`'s; the family-specific ones go through the
:class:`asmevo.targets.Target` that ``EvalContext.target`` names, the
differential run and timing through :class:`DeviceJudge`, which talks only to
the :class:`asmevo.runtime.device.Device`.

:func:`evaluate_candidate` is a pure function of a picklable
:class:`EvalContext` and an edit list, so the engine can ship it to joblib or
Dask workers. Expensive per-K0 state (the recovered program, K0's reference
runs, K0's timing) is computed once per process and cached by content.

Two sizes: every input set is checked at ``size``; with ``timing_size`` set
(say ``size = "small"``, ``timing_size = "large"`` on a GPU) the candidate is
also checked bit-equal on one input set at ``timing_size`` and timed there.
Verification needs coverage (seeds, special values, masked tails), timing
needs a production-sized launch; at a large size the full check would cost
seconds of host-side copies per candidate.
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from asmevo.edits import Edit
from asmevo.files import read_input
from asmevo.runtime.registry import DEFAULT_DEVICE, device_class
from asmevo.targets import DEFAULT_TARGET
from asmevo.targets.amdgpu.processors import DEFAULT
from asmevo.verdict import Evaluation, Timing, Verdict
from asmevo.verify.errors import VerifyError
from asmevo.verify.pipeline import CANDIDATE, CODE, Candidate, Setting, candidate_key, run




@dataclass(frozen=True)
class EvalContext:
    """Everything an evaluation needs, as plain picklable values."""

    spec_path: str
    size: str = "small"
    code_object: str | None = None      # K0 path; default: the spec's
    device: str = DEFAULT_DEVICE
    timing: str = "modeled"             # modeled | measured | none (verify only)
    seeds: tuple[int, ...] = (0, 1, 2)
    special_values: bool = True
    runs: int = 2                       # candidate runs per input set (nondeterminism)
    timeout: float = 60.0               # wall clock per candidate (child process)
    isolate: bool = True
    repetitions: int = 20               # measured timing
    warmup: int = 3
    isa: str | None = None              # e.g. "gfx90a" to pick the spec's other object
    target: str = DEFAULT_TARGET        # ISA family: asmevo.targets.REGISTRY key
    family: bool = True                 # also check launch-family members, orders, overlaps
    family_seed: int = 0                # which seeded members (recorded in equal verdicts)
    # time at this size (after a one-input-set check there); None: at ``size``.
    # Kept out of repr: see identity().
    timing_size: str | None = field(default=None, repr=False)
    # the prove stage (asmevo.prove.stage): off | on | require; out of repr as timing_size
    proof: str = field(default="on", repr=False)

    def __post_init__(self):
        if self.timing not in ("modeled", "measured", "none"):
            raise VerifyError(f"timing must be modeled, measured or none, not {self.timing!r}")
        if self.timeout <= 0 or self.runs < 1:
            raise VerifyError("timeout must be positive and runs at least 1")
        if not self.seeds and not self.special_values:
            raise VerifyError("no input sets: give seeds or enable special values")
        if self.proof not in ("off", "on", "require"):
            raise VerifyError(f"proof must be off, on or require, not {self.proof!r}")

    @property
    def sizes_differ(self) -> bool:
        return self.timing_size is not None and self.timing_size != self.size

    def identity(self) -> str:
        """What evaluation keys hash: the repr, plus fields added after keys were first
        archived only when they change anything, so archives written before them resume."""
        return repr(self)[:-1] + (f", timing_size={self.timing_size!r}" if self.sizes_differ
                                  else "") + (f", proof={self.proof!r})" if self.proof != "on"
                                              else ")")

    @property
    def key(self) -> str:
        return hashlib.sha256(self.identity().encode()).hexdigest()[:16]


@dataclass
class _K0State:
    spec: object
    k0_bytes: bytes
    code_object: object
    program: object
    device: object
    reference: object                   # K0's runs at the size under check
    baseline: object = None             # and at every other launch a check covers
    k0_time: float | None = None
    k0_noise: float = 0.0
    extra: dict = field(default_factory=dict)


@lru_cache(maxsize=8)
def _state(ctx: EvalContext) -> _K0State:
    from asmevo.runtime.registry import get_device
    from asmevo.targets import get_target
    from asmevo.verify.differential import reference_runs
    from asmevo.verify.launches import baseline
    from asmevo.launch.spec import family_space, load_spec

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
    base = baseline(device, data, spec, ref, space, seed=ctx.family_seed,
                    special=ctx.special_values,
                    restrict=target.restrict_buffers(co, spec.kernel, spec))
    return _K0State(spec, data, co, target.recover(co), device, ref, base,
                    extra={"target": target})


def k0_state(ctx: EvalContext) -> _K0State:
    return _state(ctx)


def timing_state(ctx: EvalContext) -> "_TimingState":
    """K0 at the timing size: its spec and the inputs candidates are timed on."""
    return _timing_state(ctx)


def _target(st: _K0State):
    return st.extra["target"]


def setting(ctx: EvalContext) -> Setting:
    """What the pipeline's stages judge ``ctx``'s candidates against (K0, its kernel,
    the device judge)."""
    st = _state(ctx)
    return Setting(_target(st), st.code_object, st.program, st.spec.kernel, DeviceJudge(ctx),
                   proof=ctx.proof)


def build_candidate(ctx: EvalContext, edits: tuple[Edit, ...]) -> tuple[bytes | None, Verdict | None]:
    """The candidate's code object bytes, or the verdict that stopped it before running."""
    _, cand, verdict = _built(ctx, tuple(edits))
    return cand.data, verdict


_BUILT: "OrderedDict[tuple, tuple]" = OrderedDict()


def _built(ctx: EvalContext, edits: tuple[Edit, ...]) -> tuple:
    """:func:`run` of the stages up to ``build`` (apply, gate, build) for ``edits``,
    remembered in this process for the last few edit lists: the engine builds every
    candidate before it evaluates it, and the two meet in one worker about half the
    time. The stages are pure functions of K0 and the edits (the engine checks that
    builds are deterministic), so the evaluation goes on from what they gave."""
    key = (ctx, edits)
    hit = _BUILT.get(key)
    if hit is None:
        hit = _BUILT[key] = run(setting(ctx), Candidate(edits), CANDIDATE, until="build")
        while len(_BUILT) > 64:
            _BUILT.popitem(last=False)
    return hit


def built_assembly(ctx: EvalContext, edits: tuple[Edit, ...]) -> str | None:
    """The text of a candidate :func:`_built` holds (the program its apply stage made),
    as the target prints it: what the engine stores beside an equal candidate. None
    when this process has not built it."""
    hit = _BUILT.get((ctx, tuple(edits)))
    if hit is None or hit[1].program is None:
        return None
    return _target(_state(ctx)).assembly(hit[1].program)


@dataclass
class _TimingState:
    """K0 at ``timing_size``: the spec and the inputs candidates are timed (and
    checked once more) on."""

    spec: object
    values: dict


@lru_cache(maxsize=8)
def _timing_state(ctx: EvalContext) -> _TimingState:
    from asmevo.verify.inputs import input_sets
    from asmevo.launch.spec import load_spec

    st = _state(ctx)
    spec = load_spec(ctx.spec_path, ctx.timing_size) if ctx.sizes_differ else st.spec
    return _TimingState(spec, input_sets(spec, _timing_seed(ctx), special=False)[0][1])


def _timing_seed(ctx: EvalContext) -> tuple[int]:
    return (ctx.seeds or (0,))[:1]


@lru_cache(maxsize=8)
def _timing_reference(ctx: EvalContext):
    """K0's run on the timing inputs: what the check at ``timing_size`` compares with.
    Computed only where candidates are checked (the worker, or a forking parent)."""
    from asmevo.verify.differential import reference_runs

    from asmevo.verify.timing import too_big_to_emulate

    st, ts = _state(ctx), _timing_state(ctx)
    if not st.device.measured and too_big_to_emulate(ts.spec):   # the emulator, not a GPU
        return None         # checked on sampled workgroups instead (verify/timing.py)
    return reference_runs(st.device, st.k0_bytes, ts.spec,
                          sets=[(f"seed{_timing_seed(ctx)[0]}", ts.values)], approx_variants=())


def _run_differential(ctx: EvalContext, data: bytes) -> Verdict:
    """Every launch of the check (:func:`asmevo.verify.launches.check`: every input set at
    ``size``, the family members, workgroup orders, overlaps); then, if it is equal, one
    input set at ``timing_size``."""
    from asmevo.verify.differential import differential
    from asmevo.verify.launches import check

    st = _state(ctx)
    verdict = check(st.device, st.baseline, data, st.spec, runs=ctx.runs,
                    barriers=_has_barrier(st))
    if not (verdict.equal and ctx.sizes_differ):
        return verdict
    ts = _timing_state(ctx)
    ref = _timing_reference(ctx)
    if ref is None:         # larger than the emulator runs whole: a sampled subset
        from asmevo.verify.timing import sampled_check
        big = sampled_check(st.k0_bytes, data, ts.spec, ts.values)
    else:
        big = differential(st.device, ref, data, ts.spec, runs=1, barriers=False)
    if not big.equal:
        return replace(big, reason=f"at size {ctx.timing_size}: {big.reason}",
                       details=big.details | {"size": ctx.timing_size})
    return replace(verdict, reason=f"{verdict.reason}; and 1 input set at size "
                   f"{ctx.timing_size}", details=verdict.details | {
                       "timing_size": ctx.timing_size})


def _differential_verdict(ctx: EvalContext, data: bytes) -> Verdict:
    """The differential run, in a child process with a wall-clock limit when isolated.

    A :class:`asmevo.verify.isolate.Worker` serves one candidate after another and
    is replaced after a candidate that faults, crashes or hangs (and, forked,
    after :data:`FORKED_CALLS` candidates). On the emulator it is forked, so it
    starts with K0's state computed here (reference runs included), and its
    caches (decoded instructions, replayed disassembly) stay warm from candidate
    to candidate; every candidate still runs on launch state of its own. On a
    GPU a fork would not keep the GPU context, so the worker is spawned and sets
    up its own K0 state once.
    """
    if not ctx.isolate:
        return _run_differential(ctx, data)
    w = _isolation_worker(ctx)
    verdict = w.call(_run_differential, ctx, data, timeout=ctx.timeout)
    if device_class(ctx.device).forks and ctx.timing == "modeled" and \
            isinstance(verdict, Verdict) and verdict.equal:
        _model_beside(w, ctx, data)
    return verdict


def isolation_method(ctx: EvalContext) -> str | None:
    """How ``ctx``'s differential runs are isolated: forked on a device that survives a
    fork (the emulator: the worker starts with K0's state), spawned on a GPU (a fork
    would not keep the GPU context); None where ``ctx.isolate`` is off."""
    if not ctx.isolate:
        return None
    return "fork" if device_class(ctx.device).forks else "spawn"


def _isolation_worker(ctx: EvalContext):
    """This process's worker for ``ctx``'s differential runs, K0's state set up in it."""
    from asmevo.verify.isolate import worker
    if isolation_method(ctx) == "fork":
        if ctx.sizes_differ:
            _timing_reference(ctx)      # computed once here, inherited by the worker
        if ctx.timing == "modeled":
            _timing_state(ctx)          # the inputs the worker models candidates on
        w = worker("fork", max_calls=FORKED_CALLS)
    else:
        w = worker("spawn")
    if ctx.key not in w.warm:
        # K0's state in a fresh worker (recovery, reference runs at both sizes: GBs of
        # inputs on large launches) is set up before, not inside, a candidate's time limit
        w.setup(ctx.key, _warm_worker, ctx, timeout=WARM_TIMEOUT)
    return w


def warm(ctx: EvalContext, worker: bool = True) -> None:
    """Set up, ahead of the first candidate, what every candidate of ``ctx`` needs in
    this process: K0's state (recovery, reference runs), the timing inputs and K0's
    modeled time, and on the emulator the forked worker (not with ``worker=False``: a
    process about to fork pool workers, which each fork their own). A pool's workers
    call it as they start, so they do it side by side while the parent starts up,
    instead of one after another inside the first generation. Everything it computes
    is cached by content, so a candidate's verdict does not depend on whether it ran;
    an error here is left for the first candidate to meet (and report) as it would
    without it."""
    try:
        st = _state(ctx)
        if ctx.timing == "modeled":
            from asmevo.verify.timing import k0_modeled
            ts = _timing_state(ctx)
            k0_modeled(st, ts.spec, ts.values)
        if worker and isolation_method(ctx) == "fork":
            _isolation_worker(ctx)
    except Exception:   # noqa: BLE001 - met again, and reported, by the first candidate
        pass


def _model_beside(w, ctx: EvalContext, data: bytes) -> None:
    """An equal candidate's modeled timing, computed in the forked worker that has just
    run its differential (its recovered and decoded program are warm there) and kept
    in this process's timing cache, where the timing stage then finds it. A worker
    that cannot (the launch fails, a limit, a crash) stores nothing: the timing stage
    then models the candidate here, as it always did, with the same outcome."""
    from asmevo.timing.model import TimingResult, remember
    got = w.call(_model_timing, ctx, data, timeout=ctx.timeout, counted=False)
    if isinstance(got, list) and all(isinstance(r, TimingResult) for r in got):
        ts = _timing_state(ctx)
        for res in got:
            remember(data, ts.spec, ts.values, res)


def _model_timing(ctx: EvalContext, data: bytes):
    """In the worker: the candidate's modeled results at the timing size (nominal, and
    the band's parameter sets when it is faster: verify/timing.py candidate_models), or
    None where it raises (the caller then models it itself)."""
    from asmevo.verify.timing import candidate_models
    ts = _timing_state(ctx)
    try:
        return candidate_models(_state(ctx), data, ts.spec, ts.values)
    except Exception:   # noqa: BLE001 - modeled again by the caller, which reports it
        return None


WARM_TIMEOUT = 900.0   # seconds for a fresh worker to set up K0's state
FORKED_CALLS = 256     # candidates a forked worker serves before a fresh fork replaces it


def _warm_worker(ctx: EvalContext) -> None:
    st = _state(ctx)
    if ctx.sizes_differ:
        _timing_reference(ctx)
    try:        # K0's checkpoints for candidates that meet its pass (asmevo.emu.run.converge)
        from asmevo.verify.launches import prepare
        prepare(st.device, st.baseline, st.spec, runs=ctx.runs, barriers=_has_barrier(st))
    except Exception:   # noqa: BLE001 - then each candidate runs in full, as without it
        pass


def k0_problems(ctx: EvalContext) -> list[str]:
    """What the static checks report in K0's kernel and its callees. Candidates are
    refused only for problems K0 lacks, so a report states these once."""
    st = _state(ctx)
    return _target(st).k0_problems(st.program, st.spec.kernel)


def _has_barrier(st: _K0State) -> bool:
    """K0 synchronizes waves: candidates get the race-exposing serial runs."""
    return _target(st).synchronizes(st.program, st.spec.kernel)


@dataclass(frozen=True)
class DeviceJudge:
    """The pipeline's differential and timing stages on ``ctx``'s device (a
    :class:`asmevo.verify.pipeline.Judge`); ``hot_windows``: an equal candidate's
    modeled timing also says where its time goes."""

    ctx: EvalContext
    hot_windows: bool = True

    def differential(self, data: bytes) -> Verdict:
        return _differential_verdict(self.ctx, data)

    def timing(self, program, data: bytes) -> tuple[Timing | None, dict]:
        ctx = self.ctx
        if ctx.timing == "none":
            return None, {}
        from asmevo.verify.timing import time_candidate
        ts = _timing_state(ctx)
        timing = time_candidate(ctx, _state(ctx), data, ts.spec, ts.values)
        if self.hot_windows and timing.label == "modeled":
            return timing, _hot_windows(ctx, program, data)
        return timing, {}


def evaluate_candidate(ctx: EvalContext, edits: tuple[Edit, ...]) -> Evaluation:
    """Build, gate, verify and (when equal) time one candidate: :data:`CANDIDATE`."""
    t0 = time.perf_counter()
    edits = tuple(edits)
    refused, cand, verdict = _built(ctx, edits)
    if refused is None:          # built: the stages after build
        _, cand, verdict = run(setting(ctx), cand, CANDIDATE[CANDIDATE.index("build") + 1:])
    return Evaluation(candidate_key(cand.data, edits), verdict, cand.timing,
                      time.perf_counter() - t0)


HOT_WINDOWS = 8


def _hot_windows(ctx: EvalContext, program, data: bytes) -> dict:
    """The candidate's hottest windows under the timing model, and the per-line profile
    of their instructions, as plain lists.

    They travel in the verdict's details, so the archive keeps them and an
    operator working on this candidate later edits where its time goes, and shows
    the model what each line costs (the engine itself never profiles anything).
    Only the hot windows' lines are kept: at most 8 windows of 48 lines, so a
    verdict stays small on kernels of thousands of instructions.
    """
    from asmevo.profile.modeled import profile_launch
    from asmevo.profile.windows import hot_windows

    ts = _timing_state(ctx)      # where the time is measured is where it goes
    prof = profile_launch(data, ts.spec, ts.values)
    wins = hot_windows(program, prof, top=HOT_WINDOWS, functions=[ts.spec.kernel])
    lines = []
    for w in sorted(wins, key=lambda w: (w.function, w.start)):
        fc = prof.functions[w.function]
        lines.append([w.function, w.start, [int(x) for x in fc.executions[w.start:w.end]],
                      [round(float(x), 1) for x in fc.cycles[w.start:w.end]],
                      [round(float(x), 1) for x in fc.stalls[w.start:w.end]]])
    return {"hot_windows": [[w.function, w.start, w.end, round(w.share, 4)] for w in wins],
            "line_profile": {"label": prof.source, "unit": prof.unit, "ranges": lines}}


def evaluate_code(ctx: EvalContext, data: bytes) -> Evaluation:
    """Verify and time a ready-built code object against K0 (``asmevo verify``): :data:`CODE`."""
    t0 = time.perf_counter()
    s = replace(setting(ctx), judge=DeviceJudge(ctx, hot_windows=False))
    _, cand, verdict = run(s, Candidate((), data=data), CODE)
    return Evaluation(hashlib.sha256(data).hexdigest(), verdict, cand.timing,
                      time.perf_counter() - t0)
