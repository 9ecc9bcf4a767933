"""Bit-exact floating-point helpers that numpy lacks: fused multiply-add, flushing,
NaN-aware min/max and the AMD conversion rules.

Everything works on numpy arrays of any shape and is deterministic. The
transcendental approximations (``exp2``, ``log2``, ``rcp``, ``rsq``, ``sqrt``,
``sin``, ``cos``) are computed in float64 and rounded once, so they are the
correctly rounded values in nearly all cases; hardware may differ in the last
bit (see docs/emulator.md).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

F32_MIN_NORMAL = np.float32(2.0 ** -126)
F64_MIN_NORMAL = 2.0 ** -1022
F16_MIN_NORMAL = np.float16(2.0 ** -14)

INV_2PI = 0.15915494309189535

# Inline float constants as the assembler prints them, per operand width.
FLOAT_INLINE = {"0.5": 0.5, "-0.5": -0.5, "1.0": 1.0, "-1.0": -1.0, "2.0": 2.0, "-2.0": -2.0,
                "4.0": 4.0, "-4.0": -4.0, "0.15915494": INV_2PI, "0.15915494309189532": INV_2PI,
                "0.159154943": INV_2PI, "0.1591549431": INV_2PI}
# The hardware's exact bit patterns for 1/(2*pi).
INV_2PI_BITS = {16: 0x3118, 32: 0x3E22F983, 64: 0x3FC45F306DC9C882}


def float_inline_bits(text: str, width: int) -> int | None:
    """Bits of an inline float constant for an operand of ``width`` bits, or None."""
    if text not in FLOAT_INLINE:
        return None
    v = FLOAT_INLINE[text]
    if v == INV_2PI:
        return INV_2PI_BITS[width]
    if width == 16:
        return int(np.array(v, np.float16).view(np.uint16))
    if width == 64:
        return int(np.array(v, np.float64).view(np.uint64))
    return int(np.array(v, np.float32).view(np.uint32))


# -- flushing -------------------------------------------------------------

def ftz32(x: np.ndarray) -> np.ndarray:
    """Flush float32 denormals to signed zero."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < F32_MIN_NORMAL, np.copysign(np.float32(0), x), x).astype(np.float32)


def ftz64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.where(np.abs(x) < F64_MIN_NORMAL, np.copysign(0.0, x), x)


def ftz16(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float16)
    return np.where(np.abs(x) < F16_MIN_NORMAL, np.copysign(np.float16(0), x), x).astype(np.float16)


# -- fused multiply-add ---------------------------------------------------

def fma32(a, b, c) -> np.ndarray:
    """Correctly rounded float32 a*b+c.

    The product of two float32 is exact in float64; the float64 sum is fixed
    up with its exact error term (TwoSum) so the final rounding to float32 is a
    single correct rounding, not a double one.
    """
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        s = p + c
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        bits = s.view(np.uint64) if s.ndim else np.asarray(s).view(np.uint64)
        # a float64 exactly halfway between two float32 values: low 29 bits == 1 << 28
        tie = ((bits & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28)) & (err != 0) & np.isfinite(s)
        if np.any(tie):
            s = np.where(tie, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        # subnormal float32 results: midpoints have fewer bits; round via exact check
        small = (np.abs(s) < 2.0 ** -126) & (err != 0)
        if np.any(small):
            s = np.where(small, _fix_subnormal32(s, err), s)
        return s.astype(np.float32)


def _fix_subnormal32(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """For results in float32's subnormal range, nudge float64 ties by the error sign."""
    q = s / 2.0 ** -149                       # in units of the smallest subnormal (exact)
    frac = q - np.floor(q)
    tie = frac == 0.5
    return np.where(tie, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fma64_scalar(a: float, b: float, c: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c      # the sign of an exact zero follows IEEE addition rules
    try:
        return float(exact)   # Fraction -> float is correctly rounded
    except OverflowError:
        return math.copysign(math.inf, exact)


def fma64(a, b, c) -> np.ndarray:
    """Correctly rounded float64 a*b+c (exact rational arithmetic per element)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                  np.asarray(c, np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        quick = a * b + c
        # the product is exact when both mantissas are short: then one rounding happens
        out = np.array(quick, dtype=np.float64)
    flat = out.reshape(-1)
    af, bf, cf = a.reshape(-1), b.reshape(-1), c.reshape(-1)
    for i in range(flat.size):
        flat[i] = _fma64_scalar(float(af[i]), float(bf[i]), float(cf[i]))
    return out


def fma16(a, b, c) -> np.ndarray:
    """float16 FMA: the float64 computation is exact, so one rounding to f16 is correct."""
    r = (np.asarray(a, np.float16).astype(np.float64) * np.asarray(b, np.float16).astype(np.float64)
         + np.asarray(c, np.float16).astype(np.float64))
    return r.astype(np.float16)


# -- min / max / med3 -----------------------------------------------------

def _quiet(x: np.ndarray) -> np.ndarray:
    return x


def fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """AMD v_max: a NaN operand yields the other operand; +0 > -0."""
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(invalid="ignore"):
        r = np.where(a > b, a, b)
        r = np.where(np.isnan(b), a, r)
        r = np.where(np.isnan(a), b, r)
        z = (a == 0) & (b == 0)
        if np.any(z):
            r = np.where(z & (np.signbit(a) & np.signbit(b)), -np.abs(a), np.where(z, np.abs(a), r))
    return r.astype(a.dtype)


def fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(invalid="ignore"):
        r = np.where(a < b, a, b)
        r = np.where(np.isnan(b), a, r)
        r = np.where(np.isnan(a), b, r)
        z = (a == 0) & (b == 0)
        if np.any(z):
            r = np.where(z & (np.signbit(a) | np.signbit(b)), -np.abs(a), np.where(z, np.abs(a), r))
    return r.astype(a.dtype)


def fmed3(a, b, c) -> np.ndarray:
    """v_med3_f32: the middle value; with a NaN input, the min of the other two (IEEE mode)."""
    a, b, c = np.broadcast_arrays(a, b, c)
    mx = fmax(fmax(a, b), c)
    r = np.where(mx == a, fmax(b, c), np.where(mx == b, fmax(a, c), fmax(a, b)))
    nan = np.isnan(a) | np.isnan(b) | np.isnan(c)
    if np.any(nan):
        r = np.where(nan, fmin(fmin(a, b), c), r)
    return r.astype(a.dtype)


# -- conversions ----------------------------------------------------------

def f2i(x: np.ndarray, lo: int, hi: int, out_dtype) -> np.ndarray:
    """Float to integer: truncate, clamp to [lo, hi], NaN -> 0."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo))
        return np.clip(t, lo, hi).astype(np.int64).astype(out_dtype)


def clamp01(x: np.ndarray) -> np.ndarray:
    """The clamp modifier for floats: [0, 1], NaN -> 0 (DX10 clamp)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, 0, 1)).astype(x.dtype)


def frexp_exp(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    return np.where(np.isfinite(x), e, 0).astype(np.int32)


def frexp_mant(x: np.ndarray) -> np.ndarray:
    m, _ = np.frexp(x)
    return np.where(np.isfinite(x), m, x).astype(x.dtype)


def bf16_to_f32(bits16: np.ndarray) -> np.ndarray:
    return (np.asarray(bits16, np.uint32) << 16).view(np.float32)
