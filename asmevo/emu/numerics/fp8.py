"""The 8-bit float formats of gfx940/gfx942: FP8 = E4M3FNUZ and BF8 = E5M2FNUZ.

CDNA3 uses the "FNUZ" variants (no infinities, no negative zero, one NaN
encoding 0x80): FP8 has 4 exponent bits with bias 8 (max 240, smallest
subnormal 2^-10), BF8 5 exponent bits with bias 16 (max 57344, smallest
subnormal 2^-17). Decoding is an exact 256-entry table. Encoding from f32
rounds to nearest even (the conversion instructions force RNE); NaN becomes
0x80, a zero result is +0 whatever the sign, and a finite value whose rounded
magnitude exceeds the maximum (or an infinity) overflows: to the NaN code
0x80 when MODE.FP16_OVFL is clear, to the signed maximum when it is set.

The NaN that 0x80 decodes to is 0xFFC00000 (sign set, quiet), as AMD's own
functional model of CDNA3 (ROCm rocjitsu, util/data_types.h) defines it; the
ISA guide names the value NaN without giving its bits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NAN_CODE = 0x80
NAN_F32_BITS = 0xFFC00000


@dataclass(frozen=True)
class Fp8Format:
    """One FNUZ format: exponent and mantissa widths and the exponent bias."""

    name: str
    ebits: int
    mbits: int
    bias: int

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal (subnormals share it)."""
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        emax = (1 << self.ebits) - 1 - self.bias
        return (2.0 - 2.0 ** -self.mbits) * 2.0 ** emax

    @property
    def max_code(self) -> int:
        return 0x7F


FP8 = Fp8Format("fp8", 4, 3, 8)
BF8 = Fp8Format("bf8", 5, 2, 16)
FORMATS = {"fp8": FP8, "bf8": BF8}


def _decode_table(fmt: Fp8Format) -> np.ndarray:
    out = np.zeros(256, np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> fmt.mbits) & ((1 << fmt.ebits) - 1)
        m = code & ((1 << fmt.mbits) - 1)
        if code == NAN_CODE:
            out[code] = np.nan
        elif e == 0:
            out[code] = sign * m * 2.0 ** (fmt.emin - fmt.mbits)
        else:
            out[code] = sign * (1.0 + m * 2.0 ** -fmt.mbits) * 2.0 ** (e - fmt.bias)
    return out


_F64 = {name: _decode_table(fmt) for name, fmt in FORMATS.items()}


def _f32_bits_table(fmt: Fp8Format) -> np.ndarray:
    vals = _F64[fmt.name]
    with np.errstate(invalid="ignore"):
        bits = vals.astype(np.float32).view(np.uint32).copy()
    bits[NAN_CODE] = NAN_F32_BITS
    return bits


_F32_BITS = {name: _f32_bits_table(fmt) for name, fmt in FORMATS.items()}


def decode_f64(codes: np.ndarray, fmt: str) -> np.ndarray:
    """Bytes (any integer array) -> exact float64 values (NaN for 0x80)."""
    return _F64[fmt][np.asarray(codes, np.int64) & 0xFF]


def decode_f32_bits(codes: np.ndarray, fmt: str) -> np.ndarray:
    """Bytes -> f32 bit patterns (every fp8 value is exact in f32)."""
    return _F32_BITS[fmt][np.asarray(codes, np.int64) & 0xFF]


def encode_rne(x: np.ndarray, fmt: str, fp16_ovfl: bool) -> np.ndarray:
    """f32 values -> FNUZ codes (uint32 in 0..255), round to nearest even."""
    f = FORMATS[fmt]
    x = np.asarray(x, np.float32).astype(np.float64)
    mag = np.abs(x)
    finite = np.isfinite(x)
    safe = np.where(finite & (mag > 0), mag, 1.0)
    _, e2 = np.frexp(safe)                     # safe = m * 2**e2, m in [0.5, 1)
    e = np.maximum(e2 - 1, f.emin)             # unbiased exponent, clamped at subnormals
    quantum = np.ldexp(1.0, (e - f.mbits).astype(np.int32))
    r = np.rint(safe / quantum) * quantum      # exact scaling, then round half even
    r = np.where(finite & (mag > 0), r, 0.0)
    over = ~finite | (r > f.max_finite)
    sign = np.where(np.signbit(x), 0x80, 0).astype(np.uint32)
    rs = np.where(r > 0, r, 1.0)
    _, re2 = np.frexp(rs)
    re = re2 - 1
    normal = (r >= 2.0 ** f.emin) & ~over
    mant_n = rs / np.ldexp(1.0, (re - f.mbits).astype(np.int32)) - (1 << f.mbits)
    code_n = ((re + f.bias).astype(np.int64) << f.mbits) | mant_n.astype(np.int64)
    code_s = (r / 2.0 ** (f.emin - f.mbits)).astype(np.int64)
    code = np.where(normal, code_n, code_s).astype(np.uint32) | sign
    code = np.where(r == 0, np.uint32(0), code)
    ovf = np.uint32(NAN_CODE) if not fp16_ovfl else (sign | np.uint32(f.max_code))
    code = np.where(over, ovf, code)
    return np.where(np.isnan(x), np.uint32(NAN_CODE), code).astype(np.uint32)
