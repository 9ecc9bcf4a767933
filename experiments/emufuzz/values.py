"""Bit patterns the programs see: special values per type, random ordinary values,
and the input buffers of a program (seeded, so a program's inputs are part of it).

Special values sit both scattered over lanes and in whole runs (a full wave of
-inf, say), because a compiler often lowers a path only some lanes take.
"""
from __future__ import annotations

import random

import numpy as np

from experiments.emufuzz.ir import Program, ty

_F32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000,            # +-0, +-inf
        0x7FC00000, 0xFFC00000, 0x7FC12345, 0x7FFFFFFF, 0xFFD00001,  # quiet NaNs, payloads
        0x7F800001, 0xFF812345, 0x7FA00000, 0x7FBFFFFF,             # signalling NaNs
        0x00000001, 0x807FFFFF, 0x00400000, 0x80000010,             # denormals
        0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,             # min normal, max finite
        0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000,  # 1, .5, ties
        0x4F000000, 0x4EFFFFFF, 0xCF000000, 0xCF000001,             # int32 limits
        0x4F800000, 0x4F7FFFFF, 0x5F000000, 0xDF000000, 0x5F800000,  # uint32, int64 limits
        0x4B800000, 0x4B800001, 0x477FE000, 0x477FF000, 0x33800000]  # 2^24, f16 limits
_F64 = [0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000012345678, 0x7FFFFFFFFFFFFFFF,
        0x7FF0000000000001, 0xFFF4000000000000, 0x7FF7FFFFFFFFFFFF,
        0x0000000000000001, 0x800FFFFFFFFFFFFF, 0x0008000000000000,
        0x0010000000000000, 0x8010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
        0x3FF0000000000000, 0xBFF0000000000000, 0x3FE0000000000000, 0x4004000000000000,
        0x41E0000000000000, 0x41DFFFFFFFC00000, 0xC1E0000000000000, 0xC1E0000000200000,
        0x43E0000000000000, 0xC3E0000000000000, 0x43F0000000000000, 0x43EFFFFFFFFFFFFF,
        0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x36A0000000000000, 0x3810000000000000,
        0x380FFFFFFFFFFFFF, 0x7FDFFFFFFFFFFFFF]
_F16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7E01, 0x7FFF,
        0x7C01, 0xFD00, 0x7DFF, 0x0001, 0x83FF, 0x0200, 0x0400, 0x8400, 0x7BFF, 0xFBFF,
        0x3C00, 0xBC00, 0x3800, 0x3E00, 0x4100, 0x7800, 0x6BFF, 0x1400]
_SPECIAL_FLOAT = {16: _F16, 32: _F32, 64: _F64}


def _int_specials(bits: int, signed: bool) -> list[int]:
    m = (1 << bits) - 1
    top = 1 << (bits - 1)
    vals = [0, 1, 2, 3, m, m - 1, top, top - 1, top + 1, 0x55 * (m // 0xFF), 0xAA * (m // 0xFF),
            (1 << (bits // 2)) - 1, 1 << (bits // 2), 7, 10, 1000 & m, (-1000) & m, (-7) & m]
    return sorted({v & m for v in vals})


def specials(t: str) -> list[int]:
    T = ty(t)
    if T.is_float:
        return _SPECIAL_FLOAT[T.bits]
    return _int_specials(T.bits, T.signed)


def ordinary(t: str, r: random.Random) -> int:
    """A random value of the kind programs mostly see (bits)."""
    T = ty(t)
    m = (1 << T.bits) - 1
    if T.is_int:
        k = r.random()
        if k < 0.4:
            return r.randint(-100, 100) & m
        if k < 0.55:
            return (1 << r.randrange(T.bits)) & m
        return r.getrandbits(T.bits)
    ebits = {16: 5, 32: 8, 64: 11}[T.bits]
    mbits = T.bits - 1 - ebits
    bias = (1 << (ebits - 1)) - 1
    k = r.random()
    if k < 0.25:   # a small integer or half-integer, exactly
        v = r.randint(-64, 64) / (2 if r.random() < 0.3 else 1)
        return _float_bits(v, T.bits)
    if k < 0.85:   # magnitude near 1
        e = bias + r.randint(-12, 12)
    else:          # anywhere, denormal range and near overflow included
        e = r.randrange(0, (1 << ebits) - 1)
    mant = r.getrandbits(mbits)
    return (r.getrandbits(1) << (T.bits - 1)) | (e << mbits) | mant


def _float_bits(v: float, bits: int) -> int:
    dt = {16: np.float16, 32: np.float32, 64: np.float64}[bits]
    ut = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return int(np.array(v, dt).view(ut))


def value(t: str, r: random.Random, p_special: float = 0.3) -> int:
    if r.random() < p_special:
        return r.choice(specials(t))
    return ordinary(t, r)


def buffer_bits(t: str, n: int, r: random.Random) -> np.ndarray:
    """n elements of type ``t`` as raw bits: ordinary values, scattered specials, and
    sometimes a run of one special value over a whole stretch of lanes."""
    T = ty(t)
    vals = [value(t, r, p_special=r.choice((0.05, 0.2, 0.5))) for _ in range(n)]
    for _ in range(r.choice((0, 0, 1, 2))):
        start = r.randrange(n)
        length = r.choice((8, 32, 64, 65))
        s = r.choice(specials(t))
        for i in range(start, min(n, start + length)):
            vals[i] = s
    return np.array(vals, dtype=np.uint64).astype(T.carrier)


def inputs(p: Program) -> list[np.ndarray]:
    """The input buffers of ``p`` as carrier arrays (uintN), one per ``p.buffers``."""
    r = random.Random(f"inputs:{p.input_seed}")
    return [buffer_bits(t, p.n, r) for t in p.buffers]
