"""Correctness-gated timing: only an ``equal`` candidate is ever timed.

Measured (a GPU): warm-up, then K0, K0 again and the candidate interleaved run
by run with an L2 flush before each launch; medians; the noise bound is the
relative gap between K0's two medians plus their spread, so a candidate counts
as faster only when it beats K0 by more than K0 differs from itself.

Modeled (the emulator): the CDNA3 timing model's cycles for one launch, which
are deterministic, so the noise bound is zero. Its error is the calibration's:
a candidate the model finds faster is timed again, with K0, under an ensemble of
parameter sets drawn within the fitted parameters' errors
(:func:`asmevo.timing.parameters.ensemble`), and the speedup's lowest and highest
there are its ``band``; a speedup whose band reaches 1 or below exists under some
parameter sets and not under their neighbours (``Timing.robust`` is false).
"""
from __future__ import annotations

import statistics

from asmevo.verdict import Timing

ENSEMBLE = 8        # parameter sets of a band, the nominal table among them
SUBSET_WAVES = 64   # waves a check at a size the emulator cannot hold runs (a spread subset)


def _spread(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def measured(device, k0: bytes, k1: bytes, spec, values, *, warmup: int, repetitions: int) -> Timing:
    a, b, c = device.time([k0, k0, k1], spec, values, warmup=warmup, repetitions=repetitions)
    ma, mb, mc = (statistics.median(x) for x in (a, b, c))
    noise = abs(ma / mb - 1.0) + max(_spread(a), _spread(b)) / 2
    return Timing("measured", device.name, (ma + mb) / 2, mc, noise, "s")


def parameter_sets(target: str, n: int = ENSEMBLE, device: str | None = None) -> list:
    """The ensemble a band is computed under (the nominal table first)."""
    from asmevo.timing.parameters import ensemble, load_params
    return ensemble(load_params(target, device), n)


def speedup_band(k0: bytes, k1: bytes, spec, values, *, n: int = ENSEMBLE,
                 device: str | None = None) -> tuple[float, float] | None:
    """The lowest and highest modeled speedup of ``k1`` over ``k0`` under :func:`parameter_sets`
    (None where the table has no calibration to draw from)."""
    from asmevo.timing.model import model_launch

    target = model_launch(k0, spec, values, device=device).target
    sets = parameter_sets(target, n, device)
    if len(sets) < 2 or not sets[0].calibration:
        return None
    sp = [model_launch(k0, spec, values, device=device, params=p).cycles /
          max(1, model_launch(k1, spec, values, device=device, params=p).cycles) for p in sets]
    return (min(sp), max(sp))


def candidate_models(st, k1: bytes, spec, values) -> list:
    """What timing ``k1`` needs of the model: its nominal result and, when that is faster
    than K0's, its result under every set of the ensemble (computed where its decoded
    program is warm, e.g. the forked worker; :func:`asmevo.timing.model.remember` keeps them)."""
    from asmevo.timing.model import model_launch

    nominal = model_launch(k1, spec, values)
    out = [nominal]
    if nominal.cycles < k0_modeled(st, spec, values):
        for p in parameter_sets(nominal.target)[1:]:
            out.append(model_launch(k1, spec, values, params=p))
    return out


def modeled(st, k1: bytes, spec, values) -> Timing:
    from asmevo.timing.model import model_launch

    k0 = k0_modeled(st, spec, values)
    cand = float(model_launch(k1, spec, values).cycles)
    band = speedup_band(st.k0_bytes, k1, spec, values) if cand < k0 else None
    return Timing("modeled", f"model:{st.code_object.target.processor}", float(k0), cand, 0.0,
                  "cycles", band)


def k0_modeled(st, spec, values) -> int:
    """K0's modeled cycles on ``spec`` (``st``: the K0 state, which keeps them)."""
    from asmevo.timing.model import model_launch

    if st.k0_time is None:
        st.k0_time = model_launch(st.k0_bytes, spec, values).cycles
    return st.k0_time


def too_big_to_emulate(spec) -> bool:
    """The launch has more waves than the emulator runs whole (``ASMEVO_EMU_MAX_WAVES``)."""
    import numpy as np

    from asmevo import knobs
    waves = int(np.prod(spec.grid)) * -(-int(np.prod(spec.block)) // 64)
    return knobs.MAX_EMULATED_WAVES.exceeded(waves, "launch") is not None


_K0_SUBSET: dict = {}


def sampled_check(k0: bytes, k1: bytes, spec, values):
    """The check at a size too large to emulate whole: K0 and ``k1`` run the same spread
    of workgroups (``SUBSET_WAVES`` waves, the first and last workgroup among them) on the
    same inputs, and their output buffers must be bit-equal. The verdict says it covers
    a subset; a K0 that cannot run even that is an error about the size, not a verdict on
    the candidate."""
    import hashlib

    import numpy as np

    from asmevo.timing.sample import sampled_workgroups, subset_outputs
    from asmevo.verdict import Verdict

    nwg = int(np.prod(spec.grid))
    wgs = sampled_workgroups(nwg, -(-int(np.prod(spec.block)) // 64), SUBSET_WAVES)
    key = (hashlib.sha256(k0).hexdigest(), repr(spec), tuple(wgs))
    if key not in _K0_SUBSET:
        _K0_SUBSET.clear()
        status, message, data = subset_outputs(k0, spec, values, wgs)
        if status != "ok":
            from asmevo.verify.errors import VerifyError
            raise VerifyError(f"K0 does not run {len(wgs)} sampled workgroups of the "
                              f"{nwg}-workgroup launch ({status}: {message})")
        _K0_SUBSET[key] = data
    want = _K0_SUBSET[key]
    covers = {"sampled_workgroups": len(wgs), "workgroups": nwg}
    status, message, got = subset_outputs(k1, spec, values, wgs)
    if status != "ok":
        return Verdict(status if status in ("fault", "timeout", "unsupported") else "crash",
                       f"on {len(wgs)} sampled workgroups of {nwg}: {message}", covers)
    for name, data in want.items():
        if got[name] != data:
            return Verdict("mismatch", f"buffer {name} differs on {len(wgs)} sampled "
                           f"workgroups of {nwg}", covers | {"buffer": name})
    return Verdict("equal", f"bit-equal on {len(wgs)} sampled workgroups of {nwg} (the "
                   "launch is larger than the emulator runs whole)", covers)


def time_candidate(ctx, st, k1: bytes, spec, values) -> Timing:
    """Time ``k1`` against K0 (``st``: the K0 state) on ``spec`` (the timing size)."""
    if ctx.timing == "measured":
        if not st.device.measured:
            from asmevo.runtime.device import DeviceError
            raise DeviceError(f"timing = \"measured\" needs a GPU device, not {ctx.device!r}")
        return measured(st.device, st.k0_bytes, k1, spec, values, warmup=ctx.warmup,
                        repetitions=ctx.repetitions)
    return modeled(st, k1, spec, values)
