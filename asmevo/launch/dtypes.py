"""Element types of launch specs: numpy carriers, float formats bit by bit, special values.

bfloat16 and the fp8 formats have no numpy type, so a buffer of them is carried
as raw bits (uint16 / uint8). Anything that makes or reads values of such a
buffer (input fills, references, tolerance checks) must go through
:func:`encode` / :func:`decode`, never through the carrier's integer value:
an integer fill of a bfloat16 carrier gives bit patterns 0..999, which are
all denormals near zero.

:func:`special_values` lists, per type, the values where equivalent-looking code
most often differs: signed zeros, infinities, quiet NaNs with several payloads,
signalling NaNs, denormals, the smallest normal, the largest finite, and for
integers the extremes and the sign boundary.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from asmevo.memo import cached


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: ``exp`` exponent bits, ``man`` mantissa bits.

    ``kind``: "ieee" (±0, ±inf, NaN = all-ones exponent), "fn" (OCP e4m3fn: no
    inf, NaN = all-ones exponent and mantissa), "fnuz" (AMD/Graphcore: no inf,
    no -0, the single NaN is 0x80, exponent bias one larger)."""

    name: str
    exp: int
    man: int
    kind: str = "ieee"

    @property
    def bits(self) -> int:
        return 1 + self.exp + self.man

    @property
    def bias(self) -> int:
        return (1 << (self.exp - 1)) - (0 if self.kind == "fnuz" else 1)

    def field_bits(self, sign: int, e: int, m: int) -> int:
        return (sign << (self.bits - 1)) | (e << self.man) | m


FLOATS = {
    "float64": FloatFormat("float64", 11, 52),
    "float32": FloatFormat("float32", 8, 23),
    "float16": FloatFormat("float16", 5, 10),
    "bfloat16": FloatFormat("bfloat16", 8, 7),
    "float8_e4m3fn": FloatFormat("float8_e4m3fn", 4, 3, "fn"),
    "float8_e5m2": FloatFormat("float8_e5m2", 5, 2),
    "float8_e4m3fnuz": FloatFormat("float8_e4m3fnuz", 4, 3, "fnuz"),
    "float8_e5m2fnuz": FloatFormat("float8_e5m2fnuz", 5, 2, "fnuz"),
}
_NATIVE = {"float64", "float32", "float16"}
INTEGERS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
DTYPES = frozenset(FLOATS) | INTEGERS


def np_dtype(name: str) -> np.dtype:
    """The numpy carrier of a spec dtype: bfloat16 as uint16 bits, fp8 as uint8 bits."""
    if name in _NATIVE or name in INTEGERS:
        return np.dtype(name)
    return np.dtype(f"u{FLOATS[name].bits // 8}")


def is_float(name: str) -> bool:
    return name in FLOATS


def bits_dtype(name: str) -> np.dtype:
    """The unsigned integer type of the same width (for bit-exact comparisons)."""
    return np.dtype(f"u{np_dtype(name).itemsize}")


# -- decoding and encoding ------------------------------------------------------------


def _decode_fields(fmt: FloatFormat, bits: np.ndarray) -> np.ndarray:
    b = bits.astype(np.int64)
    sign = np.where((b >> (fmt.bits - 1)) & 1, -1.0, 1.0)
    e = (b >> fmt.man) & ((1 << fmt.exp) - 1)
    m = (b & ((1 << fmt.man) - 1)).astype(np.float64)
    normal = (1.0 + m / (1 << fmt.man)) * np.exp2(e.astype(np.float64) - fmt.bias)
    sub = m / (1 << fmt.man) * np.exp2(1.0 - fmt.bias)
    val = sign * np.where(e == 0, sub, normal)
    top = (1 << fmt.exp) - 1
    if fmt.kind == "ieee":
        val = np.where(e == top, np.where(m == 0, sign * np.inf, np.nan), val)
    elif fmt.kind == "fn":
        val = np.where((e == top) & (m == (1 << fmt.man) - 1), np.nan, val)
    else:
        val = np.where(b == 1 << (fmt.bits - 1), np.nan, val)
    return val


def decode(bits, dtype: str) -> np.ndarray:
    """Values (float64) of a buffer of spec dtype ``dtype`` given in its carrier."""
    arr = np.asarray(bits)
    with np.errstate(invalid="ignore"):         # a signalling NaN quiets: a value is a value
        if dtype in _NATIVE or dtype in INTEGERS:
            return arr.astype(np.float64)
        if dtype == "bfloat16":
            return (arr.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return _decode_fields(FLOATS[dtype], arr)


@cached("launch.dtypes._code_table", None)
def _code_table(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every finite non-negative value of an 8-bit format, ascending, with its code."""
    fmt = FLOATS[dtype]
    codes = np.arange(1 << (fmt.bits - 1), dtype=np.uint16)
    vals = _decode_fields(fmt, codes)
    ok = np.isfinite(vals)
    return vals[ok], codes[ok].astype(np.uint8)


def encode(values, dtype: str) -> np.ndarray:
    """The carrier array holding ``values`` rounded to ``dtype`` (nearest, ties to even).

    Native types round as numpy does. bfloat16 rounds float32 bits. fp8 values
    beyond the largest finite saturate to it (the formats without inf have no
    other choice; e5m2 does the same, so fills never make infinities by accident);
    NaN becomes the format's NaN."""
    vals = np.asarray(values, np.float64)
    if dtype in _NATIVE or dtype in INTEGERS:
        with np.errstate(over="ignore", invalid="ignore"):
            return vals.astype(np_dtype(dtype))
    if dtype == "bfloat16":
        with np.errstate(over="ignore", invalid="ignore"):
            bits = vals.astype(np.float32).view(np.uint32).astype(np.uint64)
        out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(vals), np.uint16(0x7FC0), out).astype(np.uint16)
    fmt = FLOATS[dtype]
    table, codes = _code_table(dtype)
    mag = np.minimum(np.abs(np.nan_to_num(vals, nan=0.0, posinf=np.inf)), table[-1])
    hi = np.clip(np.searchsorted(table, mag, side="left"), 0, table.size - 1)
    lo = np.maximum(hi - 1, 0)
    dlo, dhi = mag - table[lo], table[hi] - mag
    pick = np.where((dlo < dhi) | ((dlo == dhi) & (codes[lo] % 2 == 0)), lo, hi)
    out = codes[pick].astype(np.uint8)
    neg = np.signbit(vals) & ((out != 0) | (fmt.kind != "fnuz"))
    out = np.where(neg, out | np.uint8(0x80), out).astype(np.uint8)
    nan = fmt.field_bits(0, (1 << fmt.exp) - 1, (1 << fmt.man) - 1) if fmt.kind == "fn" else \
        0x80 if fmt.kind == "fnuz" else fmt.field_bits(0, (1 << fmt.exp) - 1, 1 << (fmt.man - 1))
    return np.where(np.isnan(vals), np.uint8(nan), out).astype(np.uint8)


# -- special values -------------------------------------------------------------------


def _float_specials(fmt: FloatFormat) -> list[int]:
    """Bit patterns: path-changing values first (see :func:`path_values`)."""
    top, mmax = (1 << fmt.exp) - 1, (1 << fmt.man) - 1
    f = fmt.field_bits
    one = f(0, fmt.bias, 0)
    out: list[int] = []
    if fmt.kind == "ieee":
        quiet = 1 << (fmt.man - 1)
        out += [f(1, top, 0), f(0, top, 0), f(0, top, quiet)]
    elif fmt.kind == "fn":
        out += [f(1, top, mmax - 1), f(0, top, mmax - 1), f(0, top, mmax)]
    else:
        out += [f(1, top, mmax), f(0, top, mmax), 1 << (fmt.bits - 1)]
    out += [f(0, 0, 0)]
    if fmt.kind != "fnuz":
        out += [f(1, 0, 0)]
    if fmt.kind == "ieee":
        quiet = 1 << (fmt.man - 1)
        out += [f(0, top, 1)]                             # signalling NaN, payload 1
        if fmt.man > 2:
            out += [f(1, top, quiet | 1), f(0, top, mmax), f(1, top, quiet >> 1)]
        else:
            out += [f(1, top, quiet | 1), f(1, top, 1)]
        out += [f(1, top, quiet)]                         # the negative default qNaN
    elif fmt.kind == "fn":
        out += [f(1, top, mmax)]
    max_e = top if fmt.kind != "ieee" else top - 1
    max_m = mmax - 1 if fmt.kind == "fn" else mmax
    out += [f(0, 0, 1), f(1, 0, 1), f(0, 0, mmax), f(0, 1, 0), f(1, 1, 0),
            f(0, max_e, max_m), f(1, max_e, max_m), one, f(1, fmt.bias, 0)]
    seen: list[int] = []
    for b in out:
        if b not in seen:
            seen.append(b)
    return seen


@cached("launch.dtypes._specials", None)
def _specials(dtype: str) -> tuple[int, ...]:
    if dtype in FLOATS:
        return tuple(_float_specials(FLOATS[dtype]))
    info = np.iinfo(np.dtype(dtype))
    bits = np.dtype(dtype).itemsize * 8
    vals = [info.min, info.max, 0, -1 if info.min < 0 else 1 << (bits - 1), 1,
            info.max - 1, info.min + 1, (1 << (bits - 1)) - 1 if info.min == 0 else -2,
            1 << (bits // 2), (1 << (bits // 2)) - 1]
    out: list[int] = []
    for v in vals:
        if info.min <= v <= info.max and v not in out:
            out.append(v)
    return tuple(out)


def special_values(dtype: str) -> np.ndarray:
    """Special values of ``dtype`` in its carrier, path-changing ones first."""
    if dtype in FLOATS:
        return np.array(_specials(dtype), bits_dtype(dtype)).view(np_dtype(dtype))
    return np.array(_specials(dtype), np_dtype(dtype))


def path_values(dtype: str) -> np.ndarray:
    """The few values a whole row or group is filled with: for floats -inf, +inf, a
    quiet NaN, +0, -0, a signalling NaN (formats with inf); for integers min, max, 0, -1."""
    sv = special_values(dtype)
    return sv[:6] if dtype in FLOATS else sv[:4]
