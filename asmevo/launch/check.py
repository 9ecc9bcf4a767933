"""A launch's written buffers against the spec's numpy reference.

Exact specs (atol = rtol = 0) compare bits: integers as integers of their own
width (uint64 stays lossless), floats as the bit patterns of the reference
rounded to the buffer's type. Others compare values within the tolerance, in
float64 after decoding the buffer's type (bfloat16 and fp8 carriers included).
``nan_equal``: a NaN matches any NaN (payload and sign aside); a reference
computed in numpy cannot predict the payload a kernel produces. Without it a
NaN must match bit for bit (exact) or is a difference (tolerance).

A reference may return fewer elements than the buffer holds (a scalar argument
made the kernel write only a prefix): only those are compared.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.launch.dtypes import bits_dtype, decode, encode, is_float
from asmevo.launch.spec import LaunchSpec, SpecError


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


def _expected_bits(a, want: np.ndarray, path) -> np.ndarray:
    """The reference's values as bit patterns of the buffer's type."""
    bd = bits_dtype(a.dtype)
    if is_float(a.dtype):
        return encode(want, a.dtype).view(bd)
    if want.dtype.kind == "f" and not (np.all(np.isfinite(want))
                                       and np.all(want == np.round(want))):
        raise SpecError(f"reference.py gives non-integer values for integer buffer {a.name}",
                        path=path)
    return want.astype(np.dtype(a.dtype)).view(bd)


def check_outputs(spec: LaunchSpec, outputs: dict, expected: dict, *,
                  nan_equal: bool = False) -> list[Check]:
    """One :class:`Check` per buffer the reference returns."""
    by_name = {a.name: a for a in spec.buffers}
    out = []
    for name, want in expected.items():
        a = by_name.get(name)
        if a is None:
            raise SpecError(f"reference.py returns {name!r}, which is not a buffer of the spec",
                            path=str(spec.path))
        got = np.asarray(outputs[name]).reshape(-1)
        want = np.asarray(want).reshape(-1)
        if want.size > got.size:
            raise SpecError(f"reference.py returns {want.size} elements for {name}, which "
                            f"holds {got.size}", path=str(spec.path))
        got = got[:want.size]
        gv = decode(got, a.dtype)
        if spec.exact:
            wb = _expected_bits(a, want, str(spec.path))
            bad = got.view(bits_dtype(a.dtype)) != wb
            wv = decode(wb.view(got.dtype), a.dtype)
        else:
            wv = want.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                bad = ~((gv == wv) | (np.abs(gv - wv) <= spec.atol + spec.rtol * np.abs(wv)))
        if nan_equal and is_float(a.dtype):
            bad &= ~(np.isnan(gv) & np.isnan(wv))
        if bad.any():
            i = int(np.argmax(bad))
            out.append(Check(name, False, f"{name}[{i}]: expected {wv[i]!r}, got {gv[i]!r}; "
                             f"{int(bad.sum())} of {want.size} elements differ"))
        else:
            out.append(Check(name, True, f"{want.size} elements"))
    return out
