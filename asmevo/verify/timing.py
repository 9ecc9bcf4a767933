"""Correctness-gated timing: only an ``equal`` candidate is ever timed.

Measured (a GPU): warm-up, then K0, K0 again and the candidate interleaved run
by run with an L2 flush before each launch; medians; the noise bound is the
relative gap between K0's two medians plus their spread, so a candidate counts
as faster only when it beats K0 by more than K0 differs from itself.

Modeled (the emulator): the CDNA3 timing model's cycles for one launch, which
are deterministic, so the noise bound is zero.
"""
from __future__ import annotations

import statistics

from asmevo.verdict import Timing


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


def modeled(st, k1: bytes, spec, values) -> Timing:
    from asmevo.emu.timing import model_launch

    k0 = k0_modeled(st, spec, values)
    return Timing("modeled", f"model:{st.code_object.target.processor}", float(k0),
                  float(model_launch(k1, spec, values).cycles), 0.0, "cycles")


def k0_modeled(st, spec, values) -> int:
    """K0's modeled cycles on ``spec`` (``st``: the K0 state, which keeps them)."""
    from asmevo.emu.timing import model_launch

    if st.k0_time is None:
        st.k0_time = model_launch(st.k0_bytes, spec, values).cycles
    return st.k0_time


def time_candidate(ctx, st, k1: bytes, spec, values) -> Timing:
    """Time ``k1`` against K0 (``st``: the K0 state) on ``spec`` (the timing size)."""
    if ctx.timing == "measured":
        if not st.device.measured:
            from asmevo.runtime.device import DeviceError
            raise DeviceError(f"timing = \"measured\" needs a GPU device, not {ctx.device!r}")
        return measured(st.device, st.k0_bytes, k1, spec, values, warmup=ctx.warmup,
                        repetitions=ctx.repetitions)
    return modeled(st, k1, spec, values)
