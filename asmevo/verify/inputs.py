"""Input sets for differential runs: seeded draws from the spec plus special values.

Special-value sets salt each input buffer with the values where equivalent-looking
code most often differs: signed zeros, infinities, NaN, denormals, extremes of
the type. K0 decides the kernel's domain: an input set on which K0 itself faults
is dropped (and reported), never held against a candidate.
"""
from __future__ import annotations

import numpy as np

from asmevo.verify.spec import LaunchSpec, make_inputs, np_dtype

POISON_BYTE = 0xA5          # output buffers are filled with this before every launch
GUARD_BYTE = 0x5A           # guard regions around every buffer


def _special_values(dtype: str) -> np.ndarray:
    dt = np_dtype(dtype)
    if dtype == "bfloat16":
        return np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x7F7F, 0xFF7F,
                         0x3F80, 0xBF80], dtype=np.uint16)
    if dt.kind == "f":
        info = np.finfo(dt)
        return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal,
                         -info.smallest_subnormal, info.max, -info.max, info.tiny, 1.0, -1.0],
                        dtype=dt)
    info = np.iinfo(dt)
    return np.array(sorted({0, 1, info.max, info.min, info.max - 1, info.min + 1,
                            -1 if info.min < 0 else 2}), dtype=dt)


def special_inputs(spec: LaunchSpec, seed: int) -> dict:
    """A seeded draw with every 7th element of special-eligible inputs replaced."""
    vals = make_inputs(spec, seed)
    rng = np.random.default_rng(10_000 + seed)
    for a in spec.args:
        if a.kind != "buffer" or a.output or not a.special:
            continue
        arr = vals[a.name].copy()
        sv = _special_values(a.dtype)
        idx = np.arange(rng.integers(0, 7), arr.size, 7)
        arr[idx] = sv[rng.integers(0, sv.size, idx.size)]
        vals[a.name] = arr
    return vals


def poisoned(spec: LaunchSpec, values: dict) -> dict:
    """Buffer contents for one launch: inputs as drawn, outputs filled with POISON_BYTE."""
    out = {}
    for a in spec.buffers:
        arr = np.ascontiguousarray(values[a.name]).copy()
        if a.output:
            arr.view(np.uint8)[:] = POISON_BYTE
        out[a.name] = arr
    for a in spec.args:
        if a.kind != "buffer":
            out[a.name] = values[a.name]
    return out


def input_sets(spec: LaunchSpec, seeds=(0, 1, 2), special: bool = True) -> list[tuple[str, dict]]:
    sets = [(f"seed{s}", make_inputs(spec, s)) for s in seeds]
    if special:
        sets.append(("special", special_inputs(spec, seeds[0] if seeds else 0)))
    return sets
