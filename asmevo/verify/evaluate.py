"""One candidate, start to finish, on a device: the state the pipeline's stages need.

The stages themselves (apply, gate, build, abi, differential, timing) are
:mod:`asmevo.verify.pipeline`'s; the family-specific ones go through the
:class:`asmevo.targets.Target` that ``EvalContext.target`` names, the
differential run and timing through :class:`DeviceJudge`, which talks only to
the :class:`asmevo.runtime.device.Device`.

:func:`evaluate_candidate` is a pure function of a picklable
:class:`EvalContext` and an edit list, so the engine can ship it to joblib or
Dask workers. Expensive per-K0 state (the recovered program, K0's reference
runs, K0's timing) is the context's :class:`asmevo.verify.baseline.Baseline`, built
once per process (:func:`k0_state`) and passed down to the stages from there.

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
from dataclasses import dataclass, replace

from asmevo.edits import Edit
from asmevo.memo import Memo
from asmevo.runtime.registry import device_class
from asmevo.verdict import Evaluation, Timing, Verdict
from asmevo.verify.baseline import Baseline, k0_state
from asmevo.verify.context import EvalContext
from asmevo.verify.pipeline import CANDIDATE, CODE, Candidate, Setting, candidate_key, run


def setting(ctx: EvalContext) -> Setting:
    """What the pipeline's stages judge ``ctx``'s candidates against: its Baseline's
    K0 and kernel, and the device judge over that Baseline."""
    st = k0_state(ctx)
    return Setting(st.target, st.code_object, st.program, st.spec.kernel, DeviceJudge(st),
                   proof=ctx.proof, proof_budget=ctx.proof_budget, block=st.spec.block)


def build_candidate(ctx: EvalContext, edits: tuple[Edit, ...]) -> tuple[bytes | None, Verdict | None]:
    """The candidate's code object bytes, or the verdict that stopped it before running."""
    _, cand, verdict = _built(ctx, tuple(edits))
    return cand.data, verdict


_BUILT: Memo[tuple] = Memo("verify.built", 64, evict="oldest")


def _built(ctx: EvalContext, edits: tuple[Edit, ...]) -> tuple:
    """:func:`run` of the stages up to ``build`` (apply, gate, build) for ``edits``,
    remembered in this process for the last few edit lists: the engine builds every
    candidate before it evaluates it, and the two meet in one worker about half the
    time. The stages are pure functions of K0 and the edits (the engine checks that
    builds are deterministic), so the evaluation goes on from what they gave."""
    key = (ctx, edits)
    hit = _BUILT.get(key)
    if hit is None:
        hit = _BUILT.put(key, run(setting(ctx), Candidate(edits), CANDIDATE, until="build"))
    return hit


def built_assembly(ctx: EvalContext, edits: tuple[Edit, ...]) -> str | None:
    """The text of a candidate :func:`_built` holds (the program its apply stage made),
    as the target prints it: what the engine stores beside an equal candidate. None
    when this process has not built it."""
    hit = _BUILT.get((ctx, tuple(edits)))
    if hit is None or hit[1].program is None:
        return None
    return k0_state(ctx).target.assembly(hit[1].program)


def _run_differential(ctx: EvalContext, data: bytes) -> Verdict:
    """The candidate checked against ``ctx``'s Baseline (:meth:`Baseline.check`): what a
    worker runs, by name, with the context it was sent."""
    return k0_state(ctx).check(data)


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
        st = k0_state(ctx)
        if ctx.sizes_differ:
            st.timing_reference()       # computed once here, inherited by the worker
        if ctx.timing == "modeled":
            st.timing_inputs()          # the inputs the worker models candidates on
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
        st = k0_state(ctx)
        if ctx.timing == "modeled":
            from asmevo.verify.timing import k0_modeled
            ts = st.timing_inputs()
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
        ts = k0_state(ctx).timing_inputs()
        for res in got:
            remember(data, ts.spec, ts.values, res)


def _model_timing(ctx: EvalContext, data: bytes):
    """In the worker: the candidate's modeled results at the timing size (nominal, and
    the band's parameter sets when it is faster: verify/timing.py candidate_models), or
    None where it raises (the caller then models it itself)."""
    from asmevo.verify.timing import candidate_models
    st = k0_state(ctx)
    ts = st.timing_inputs()
    try:
        return candidate_models(st, data, ts.spec, ts.values)
    except Exception:   # noqa: BLE001 - modeled again by the caller, which reports it
        return None


WARM_TIMEOUT = 900.0   # seconds for a fresh worker to set up K0's state
FORKED_CALLS = 256     # candidates a forked worker serves before a fresh fork replaces it


def _warm_worker(ctx: EvalContext) -> None:
    st = k0_state(ctx)
    if ctx.sizes_differ:
        st.timing_reference()
    try:        # K0's checkpoints for candidates that meet its pass (asmevo.emu.run.converge)
        st.prepare()
    except Exception:   # noqa: BLE001 - then each candidate runs in full, as without it
        pass


def k0_problems(ctx: EvalContext) -> list[str]:
    """What the static checks report in K0's kernel and its callees. Candidates are
    refused only for problems K0 lacks, so a report states these once."""
    return k0_state(ctx).k0_problems()


@dataclass(frozen=True)
class DeviceJudge:
    """The pipeline's differential and timing stages against ``base`` on its context's
    device (a :class:`asmevo.verify.pipeline.Judge`); ``hot_windows``: an equal
    candidate's modeled timing also says where its time goes."""

    base: Baseline
    hot_windows: bool = True

    def differential(self, data: bytes) -> Verdict:
        return _differential_verdict(self.base.ctx, data)

    def timing(self, program, data: bytes) -> tuple[Timing | None, dict]:
        st = self.base
        if st.ctx.timing == "none":
            return None, {}
        from asmevo.verify.timing import time_candidate
        ts = st.timing_inputs()
        timing = time_candidate(st.ctx, st, data, ts.spec, ts.values)
        if self.hot_windows and timing.label == "modeled":
            return timing, _hot_windows(ts, program, data)
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


def _hot_windows(ts, program, data: bytes) -> dict:
    """The candidate's hottest windows under the timing model, and the per-line profile
    of their instructions, as plain lists.

    They travel in the verdict's details, so the archive keeps them and an
    operator working on this candidate later edits where its time goes, and shows
    the model what each line costs (the engine itself never profiles anything).
    Only the hot windows' lines are kept: at most 8 windows of 48 lines, so a
    verdict stays small on kernels of thousands of instructions. ``ts``: the timing
    inputs (where the time is measured is where it goes).
    """
    from asmevo.profile.modeled import profile_launch
    from asmevo.profile.windows import hot_windows

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
    s = replace(setting(ctx), judge=DeviceJudge(k0_state(ctx), hot_windows=False))
    _, cand, verdict = run(s, Candidate((), data=data), CODE)
    return Evaluation(hashlib.sha256(data).hexdigest(), verdict, cand.timing,
                      time.perf_counter() - t0)
