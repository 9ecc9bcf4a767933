"""Bit-exact floating-point helpers that numpy lacks: fused multiply-add with one
rounding, ldexp over the full exponent range, flushing, the ISA's IEEE-mode
min/max/med3 and the AMD conversion rules.

Everything works on numpy arrays of any shape, is deterministic and exact
(correctly rounded where the ISA says so). Instructions whose hardware result
is only specified to within an error bound live in :mod:`asmevo.emu.numerics.approx`.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from asmevo.memo import Memo

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

def _ftz(x: np.ndarray, dt, min_normal) -> np.ndarray:
    """``x`` (as ``dt``, a new array) with its denormals flushed to signed zero."""
    x = np.asarray(x, dt)
    small = np.abs(x) < min_normal
    if not small.any():         # the common case: a copy, as the flush below makes one
        return np.array(x, dt, copy=True)
    return np.where(small, np.copysign(dt(0), x), x).astype(dt)


def ftz32(x: np.ndarray) -> np.ndarray:
    """Flush float32 denormals to signed zero."""
    return _ftz(x, np.float32, F32_MIN_NORMAL)


def ftz64(x: np.ndarray) -> np.ndarray:
    return _ftz(x, np.float64, F64_MIN_NORMAL)


def ftz16(x: np.ndarray) -> np.ndarray:
    return _ftz(x, np.float16, F16_MIN_NORMAL)


# -- fused multiply-add ---------------------------------------------------

def round_sum(p: np.ndarray, c: np.ndarray, dt) -> np.ndarray:
    """Correctly round the exact value ``p + c`` (two float64 values) to ``dt``, once.

    ``s = fl64(p + c)`` rounds to ``dt`` like the exact sum unless ``s`` lands on a
    midpoint of ``dt`` (midpoints are float64 values); then the exact error
    term of the sum (TwoSum) breaks the tie.
    """
    with np.errstate(all="ignore"):
        p = np.asarray(p, np.float64)
        c = np.asarray(c)
        if c.dtype not in _EXACT_IN_F64:
            c = np.asarray(c, np.float64)
        s = np.add(p, c, dtype=np.float64)     # a float32/float16 c converts exactly
        special = _midpoint_or_tiny(s, dt)
        if not np.any(special):
            # rounding fl64(x) to dt differs from rounding x only where fl64(x) is a
            # midpoint of dt (a midpoint strictly between x and fl64(x) would be a
            # float64 nearer to x); dt's subnormal range takes the general path
            return np.asarray(s.astype(dt), dt)
        if s.ndim == 0:
            return _round_sum_general(p, c.astype(np.float64), s, dt)
        # the general path is elementwise and gives fl64's rounding elsewhere: run it on
        # the special elements only (by flat index: np.nonzero of a 2-D mask costs
        # several times np.flatnonzero, and the elements and their order are the same)
        at = np.flatnonzero(special)
        r = np.asarray(s.astype(dt, order="C"), dt)
        r.reshape(-1)[at] = _round_sum_general(_flat_at(p, s.shape, at),
                                               _flat_at(c, s.shape, at).astype(np.float64),
                                               s.reshape(-1)[at], dt)
        return r


_EXACT_IN_F64 = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16))


def _flat_at(x: np.ndarray, shape, at: np.ndarray) -> np.ndarray:
    """``np.broadcast_to(x, shape).reshape(-1)[at]``, without copying a broadcast ``x``."""
    if x.shape == shape:
        return x.reshape(-1)[at]
    if x.ndim == 0:
        return np.full(at.shape, x, x.dtype)
    return np.broadcast_to(x, shape).reshape(-1)[at]


def _round_sum_general(p: np.ndarray, c: np.ndarray, s: np.ndarray, dt) -> np.ndarray:
    """:func:`round_sum` of ``p + c`` (``s`` = fl64 of it) with the TwoSum tie-break."""
    with np.errstate(all="ignore"):
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        r = s.astype(dt)
        fix = (err != 0) & np.isfinite(s)
        if np.any(fix):
            r64 = r.astype(np.float64)
            other = np.where(r64 > s, np.nextafter(r, dt(-np.inf)),
                             np.nextafter(r, dt(np.inf))).astype(dt)
            tie = fix & (s == (r64 + other.astype(np.float64)) / 2)
            if np.any(tie):
                nudged = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
                r = np.where(tie, nudged.astype(dt), r)
        return np.asarray(r, dt)


# dt -> (low-bits mask, the midpoint's low bits, bits of tiny - 1): one per float dtype
_MIDPOINT: Memo[tuple] = Memo("emu.exact.midpoint", None)
_ABS64 = np.uint64((1 << 63) - 1)


def _midpoint_or_tiny(s: np.ndarray, dt) -> np.ndarray:
    """Where float64 ``s`` is a midpoint of ``dt``'s normal numbers (or beyond its
    largest), or a nonzero value below its smallest normal."""
    k = _MIDPOINT.get(dt)
    if k is None:
        f = np.finfo(dt)
        shift = 52 - f.nmant
        k = _MIDPOINT.put(dt, (np.uint64((1 << shift) - 1), np.uint64(1 << (shift - 1)),
                               np.uint64(int(np.float64(f.tiny).view(np.uint64)) - 1)))
    mask, half, tiny1 = k
    b = s.view(np.uint64)
    if np.ndim(b) == 0:         # one value (a numpy scalar): no scratch array
        return ((b & mask) == half) | (((b & _ABS64) - np.uint64(1)) < tiny1)
    # |s| < tiny and s != 0, on the bits: 0 < |s|'s bits < tiny's (a NaN's are above
    # tiny's, as its comparison is false), as one unsigned compare of bits - 1; one
    # scratch array for both tests (a large temporary costs more than its pass)
    t = np.bitwise_and(b, _ABS64)
    t -= np.uint64(1)
    tiny = t < tiny1
    np.bitwise_and(b, mask, out=t)
    out = t == half
    out |= tiny
    return out


def fma32(a, b, c, scale: int = 0) -> np.ndarray:
    """Correctly rounded float32 ``(a*b + c) * 2**scale``, one rounding.

    The product of two float32 is exact in float64 (48 bits) and scaling by a
    power of two is exact there too, so :func:`round_sum` of the two terms is
    the single correct rounding (subnormal results included).
    """
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    c = np.asarray(c, np.float32)
    with np.errstate(all="ignore"):
        # the exact product in float64, made in place in one float64 copy (every float64
        # temporary of a cluster's size is one more large allocation); c stays float32
        # until round_sum's float64 add, which converts it exactly
        shape = np.broadcast_shapes(a.shape, b.shape)
        if a.shape == shape:
            p = a.astype(np.float64)
            p *= b
        elif b.shape == shape:
            p = b.astype(np.float64)
            p *= a
        else:
            p = a.astype(np.float64) * b.astype(np.float64)
        if scale:
            k = 2.0 ** scale
            p *= k
            c = c.astype(np.float64) * k
        return round_sum(p, c, np.float32)


def _fma64_exact(a: float, b: float, c: float, scale: int = 0) -> float:
    """round(a*b + c) * 2**scale rounded once, for finite a, b, c (exact rationals)."""
    exact = (Fraction(a) * Fraction(b) + Fraction(c)) * (Fraction(2) ** scale)
    if exact == 0:
        with np.errstate(all="ignore"):
            return float(np.float64(a) * np.float64(b) + np.float64(c))  # IEEE zero sign
    try:
        return float(exact)      # Fraction -> float rounds correctly, subnormals included
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _two_prod(a, b):
    """(p, e) with p = fl(a*b) and p + e == a*b exactly (Dekker; |a|, |b| < 2**995)."""
    split = 134217729.0                      # 2**27 + 1
    ca, cb = split * a, split * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fma64(a, b, c, scale: int = 0) -> np.ndarray:
    """Correctly rounded float64 ``(a*b + c) * 2**scale`` (one rounding).

    Vectorized: with error-free transformations the exact value is
    ``r + (w + v)``, ``r`` the rounded sum. ``r`` is the answer whenever
    ``|w| + |v|`` stays clearly below half the spacing to ``r``'s neighbours and
    nothing over- or underflows; only the other elements (ties, subnormal or
    huge results, huge operands) take the exact rational path.
    """
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                  np.asarray(c, np.float64))
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
        s, t = _two_sum(p, c)
        u, v = _two_sum(t, e)
        r, w = _two_sum(s, u)
        mag = np.abs(r)
        up = np.spacing(mag)
        pow2 = (mag.view(np.uint64) & np.uint64((1 << 52) - 1)) == 0
        half = np.where(pow2, up / 4, up / 2)       # half the smaller neighbour spacing
        big, small = 2.0 ** 995, 2.0 ** -900
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        safe = (finite & (np.abs(a) < big) & (np.abs(b) < big) & (np.abs(c) < big)
                & ((np.abs(p) > small) | (p == 0)) & ((np.abs(c) > small) | (c == 0))
                & (mag > small) & (mag < big) & np.isfinite(r)
                & ((np.abs(w) + np.abs(v)) < half * (1 - 2.0 ** -40)))
        if scale:
            r = r * 2.0 ** scale
            safe &= (np.abs(r) > 2.0 ** -1000) & (np.abs(r) < 2.0 ** 1000)
        out = np.array(r, dtype=np.float64)
        # the transforms are exact only while the product does not underflow: a nonzero
        # a*b lost below the denormals is not an exact zero (its sign survives rounding)
        exact_p = (a == 0) | (b == 0) | (np.abs(p) > small)
        zero = finite & exact_p & (r == 0) & (w == 0) & (v == 0) & (s == 0)
        if zero.any():      # exact zero: IEEE sign rules of a*b + c
            signed = np.where((a == 0) | (b == 0), a * b + c, 0.0)
            out = np.where(zero, signed, out)
            safe = safe | zero
        special = ~finite
        if special.any():   # inf/NaN operands: IEEE arithmetic decides, no rounding; a
            # finite product is exact (never inf), so finite*finite + inf is that inf
            ieee = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, a * b + c)
            out = np.where(special, ieee * (2.0 ** scale), out)
    hard = ~safe & finite
    if hard.any():
        flat, af, bf, cf = out.reshape(-1), a.reshape(-1), b.reshape(-1), c.reshape(-1)
        for i in np.flatnonzero(hard.reshape(-1)):
            flat[i] = _fma64_exact(float(af[i]), float(bf[i]), float(cf[i]), scale)
    return out


def fma16(a, b, c) -> np.ndarray:
    """float16 FMA: the product is exact in float64, then one correct rounding."""
    a = np.asarray(a, np.float16).astype(np.float64)
    b = np.asarray(b, np.float16).astype(np.float64)
    with np.errstate(all="ignore"):
        return round_sum(a * b, np.asarray(c, np.float16).astype(np.float64), np.float16)


def ldexp(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x * 2**e rounded once, for any int32 exponent (C ldexp is exact up to the
    final rounding; exponents beyond +-4000 saturate every format the same way)."""
    x = np.asarray(x)
    e = np.clip(np.asarray(e).astype(np.int64), -4000, 4000).astype(np.int32)
    with np.errstate(all="ignore"):
        if x.dtype == np.float16:       # via float32: exact, then one rounding to f16
            return np.ldexp(x.astype(np.float32), e).astype(np.float16)
        return np.ldexp(x, e).astype(x.dtype)


# -- min / max / med3 (CDNA3 ISA pseudocode, IEEE mode per MODE.IEEE) -------------

def fmax(a: np.ndarray, b: np.ndarray, ieee: bool = True) -> np.ndarray:
    """V_MAX: sNaN (IEEE mode) -> that operand quieted; a NaN -> the other operand;
    +0 > -0; otherwise the larger."""
    a, b = _same_shape(a, b)
    with np.errstate(invalid="ignore"):
        # np.where(a >= b, a, b) where that decides (no NaN, not both zeros: those are
        # set below), in one pass without a mask
        r = np.maximum(a, b)
        z = (a == 0) & (b == 0)
        if z.any():
            r = np.where(z, np.where(np.signbit(a), b, a), r)
        r = _nan_rules(a, b, r, ieee)
    return r.astype(a.dtype)


def fmin(a: np.ndarray, b: np.ndarray, ieee: bool = True) -> np.ndarray:
    """V_MIN: like :func:`fmax`, -0 < +0."""
    a, b = _same_shape(a, b)
    with np.errstate(invalid="ignore"):
        r = np.minimum(a, b)     # np.where(a < b, a, b) where that decides: as in fmax
        z = (a == 0) & (b == 0)
        if z.any():
            r = np.where(z, np.where(np.signbit(a), a, b), r)
        r = _nan_rules(a, b, r, ieee)
    return r.astype(a.dtype)


def _same_shape(a, b):
    """``np.broadcast_arrays(a, b)``, without its cost when they already agree."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape:
        return a, b
    return np.broadcast_arrays(a, b)


def _nan_rules(a, b, r, ieee: bool):
    na, nb = np.isnan(a), np.isnan(b)
    if not (na.any() or nb.any()):
        return r
    from asmevo.emu.numerics.fpmode import is_snan, quiet
    r = np.where(nb, a, r)
    r = np.where(na, b, r)
    if ieee:
        r = np.where(is_snan(b), quiet(b), r)
        r = np.where(is_snan(a), quiet(a), r)
    return r


def fmax3(a, b, c, ieee: bool = True):
    return fmax(fmax(a, b, ieee), c, ieee)


def fmin3(a, b, c, ieee: bool = True):
    return fmin(fmin(a, b, ieee), c, ieee)


def fmed3(a, b, c, ieee: bool = True) -> np.ndarray:
    """V_MED3: with any NaN operand v_min3 of all three; otherwise the middle value."""
    a, b, c = np.broadcast_arrays(a, b, c)
    mx = fmax3(a, b, c, ieee)
    with np.errstate(invalid="ignore"):
        r = np.where(mx == a, fmax(b, c, ieee), np.where(mx == b, fmax(a, c, ieee),
                                                          fmax(a, b, ieee)))
    nan = np.isnan(a) | np.isnan(b) | np.isnan(c)
    if np.any(nan):
        r = np.where(nan, fmin3(a, b, c, ieee), r)
    return r.astype(a.dtype)


# -- conversions ----------------------------------------------------------

def f2i(x: np.ndarray, lo: int, hi: int, out_dtype) -> np.ndarray:
    """Float to integer: truncate, clamp to [lo, hi], NaN -> 0."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo))
        return np.clip(t, lo, hi).astype(np.int64).astype(out_dtype)


def clamp01(x: np.ndarray, dx10: bool = True) -> np.ndarray:
    """The clamp modifier for floats: [0, 1]; a NaN becomes +0 with MODE.DX10_CLAMP
    set and passes through otherwise (AMDGPUUsage, DX10_CLAMP)."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        c = np.clip(x, 0, 1)
        c = np.where(c == 0, x.dtype.type(0), c)      # -0 clamps to +0
        return np.where(np.isnan(x), x.dtype.type(0) if dx10 else x, c).astype(x.dtype)


def frexp_exp(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    return np.where(np.isfinite(x), e, 0).astype(np.int32)


def frexp_mant(x: np.ndarray) -> np.ndarray:
    m, _ = np.frexp(x)
    return np.where(np.isfinite(x), m, x).astype(x.dtype)
