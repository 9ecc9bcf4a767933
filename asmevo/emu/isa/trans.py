"""Transcendental VALU instructions: v_exp, v_log, v_rcp, v_rsq, v_sqrt, v_sin, v_cos.

The ISA specifies them to within an error bound only (f32: 1 ULP; f16:
0.51 ULP; f64 rcp/rsq/sqrt: 2^29 ULP), so each is a family of functions
(:mod:`asmevo.emu.numerics.approx`); everything else about them is exact:

* the ISA's special values: log of a negative number, sqrt/rsq of a negative
  number and sin/cos of an infinity give the default NaN 0xffc00000
  (0xfe00, 0xfff8000000000000); a NaN input comes back quieted; rcp/rsq of
  -0 give -inf, sqrt(-0) = -0, exp(-inf) = +0;
* the f32 forms of exp, log, rcp, rcp_iflag, rsq, sqrt flush denormal inputs
  and outputs to signed zero whatever MODE says ("denormals are flushed");
  the f16 and f64 forms and sin/cos follow MODE like other float instructions;
* sin/cos take their argument in turns (``sin(2*pi*x)``), reduced exactly
  (``x - rint(x)``), so "full range input" holds; quarter turns are exact.

``v_exp_legacy_f32``/``v_log_legacy_f32`` have no documented semantics here and
stay unsupported.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import approx
from asmevo.emu.numerics import exact as nx
from asmevo.emu.isa.insn import Decoded, Insn, register
from asmevo.emu.numerics.fpmode import quiet
from asmevo.emu.isa.valu import build

F16, F32, F64 = np.float16, np.float32, np.float64
_DEFAULT_NAN = {F16: np.uint16(0xFE00), F32: np.uint32(0xFFC00000),
                F64: np.uint64(0xFFF8000000000000)}


def _nans(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """NaN inputs propagate quieted; NaNs the function made are the default NaN."""
    dt = r.dtype.type
    made, given = np.isnan(r), np.isnan(x)
    if not (made.any() or given.any()):
        return r.astype(dt)
    r = np.where(made, _DEFAULT_NAN[dt].view(dt), r)
    return np.where(given, quiet(x), r).astype(dt)


def _ftz_keep_sign(x: np.ndarray) -> np.ndarray:
    return {F32: nx.ftz32, F16: nx.ftz16, F64: nx.ftz64}[x.dtype.type](x)


def _turns(fn, quarter: tuple[float, float, float, float]):
    """sin/cos of 2*pi*x with exact range reduction; exact at quarter turns."""
    def f(x64):
        red = x64 - np.rint(x64)                     # exact for every float
        val = fn(2 * np.pi * red)
        q = red * 4
        exact = np.isfinite(q) & (q == np.rint(q))
        table = np.array(quarter, F64)[(np.rint(np.where(exact, q, 0)).astype(np.int64)) % 4]
        return np.where(exact, table, val)
    return f


def _family(fn64, dt, *, flush: bool, bound: float, zero_keeps_input: bool = False):
    """A row function for one transcendental instruction of format ``dt``."""
    def f(a, *, variant: int, key: int):
        x = _ftz_keep_sign(a) if flush else a
        with np.errstate(all="ignore"):
            t = fn64(x.astype(F64))
            r = t.astype(dt)
            if dt is F64:
                r = approx.offset_ulps(r, _exact64(fn64, x, r), variant, key, a, 2 ** 29)
            else:
                r = approx.faithful(t, r, variant, key, a, bound)
        if flush:
            r = _ftz_keep_sign(r)
        if zero_keeps_input:
            r = np.where(x == 0, x, r)
        return _nans(a, np.asarray(r, dt))
    f.approx = True
    return f


def _rcp(x):
    return 1.0 / x


def _rsq(x):
    return 1.0 / np.sqrt(x)


def _exact64(fn64, x, r):
    """f64 results that are exact, which no family member perturbs."""
    mant = (x.view(np.uint64) & np.uint64((1 << 52) - 1)) == 0
    if fn64 is _rcp:
        return mant
    if fn64 is _rsq:
        exp = ((x.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
        return mant & (exp % 2 == 0)
    with np.errstate(all="ignore"):
        return nx.fma64(r, r, -x) == 0


_SIN = _turns(np.sin, (0.0, 1.0, 0.0, -1.0))
_COS = _turns(np.cos, (1.0, 0.0, -1.0, 0.0))

TRANS = {
    "v_exp_f32": ("f32", ("f32",), _family(np.exp2, F32, flush=True, bound=1.0)),
    "v_log_f32": ("f32", ("f32",), _family(np.log2, F32, flush=True, bound=1.0)),
    "v_rcp_f32": ("f32", ("f32",), _family(_rcp, F32, flush=True, bound=1.0)),
    "v_rcp_iflag_f32": ("f32", ("f32",), _family(_rcp, F32, flush=True, bound=1.0)),
    "v_rsq_f32": ("f32", ("f32",), _family(_rsq, F32, flush=True, bound=1.0)),
    "v_sqrt_f32": ("f32", ("f32",), _family(np.sqrt, F32, flush=True, bound=1.0)),
    "v_sin_f32": ("f32", ("f32",), _family(_SIN, F32, flush=False, bound=1.0,
                                           zero_keeps_input=True)),
    "v_cos_f32": ("f32", ("f32",), _family(_COS, F32, flush=False, bound=1.0)),
    "v_exp_f16": ("f16", ("f16",), _family(np.exp2, F16, flush=False, bound=0.51)),
    "v_log_f16": ("f16", ("f16",), _family(np.log2, F16, flush=False, bound=0.51)),
    "v_rcp_f16": ("f16", ("f16",), _family(_rcp, F16, flush=False, bound=0.51)),
    "v_rsq_f16": ("f16", ("f16",), _family(_rsq, F16, flush=False, bound=0.51)),
    "v_sqrt_f16": ("f16", ("f16",), _family(np.sqrt, F16, flush=False, bound=0.51)),
    "v_sin_f16": ("f16", ("f16",), _family(_SIN, F16, flush=False, bound=1.0,
                                           zero_keeps_input=True)),
    "v_cos_f16": ("f16", ("f16",), _family(_COS, F16, flush=False, bound=1.0)),
    "v_rcp_f64": ("f64", ("f64",), _family(_rcp, F64, flush=False, bound=2.0 ** 29)),
    "v_rsq_f64": ("f64", ("f64",), _family(_rsq, F64, flush=False, bound=2.0 ** 29)),
    "v_sqrt_f64": ("f64", ("f64",), _family(np.sqrt, F64, flush=False, bound=2.0 ** 29)),
}


@register(*TRANS)
def _trans(ins: Insn) -> Decoded:
    return build(ins, row=TRANS[ins.base])
