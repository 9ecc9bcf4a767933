"""The float helpers' fast paths (no NaN, no denormal, equal shapes) against scalar
references written from the rules in docs/emulator.md ("Numerics"), on every pair of
edge operands: signed zeros, infinities, denormals, quiet and signalling NaNs with
payloads and signs, the largest and smallest normals. Bits, not values."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from asmevo.emu.numerics import exact as nx
from asmevo.emu.isa import trans
from asmevo.emu.machine.state import join64, pack_mask, split64

FORMATS = {  # dtype: (uint, quiet bit, an sNaN, a negative sNaN, a quiet NaN with payload)
    np.float16: (np.uint16, 0x0200, 0x7C01, 0xFC05, 0x7E23),
    np.float32: (np.uint32, 0x00400000, 0x7F800001, 0xFF800005, 0x7FC00123),
    np.float64: (np.uint64, 1 << 51, 0x7FF0000000000001, 0xFFF0000000000005,
                 0x7FF8000000000123),
}


def edges(dt) -> np.ndarray:
    ui, _, snan, nsnan, qnan = FORMATS[dt]
    fi = np.finfo(dt)
    vals = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, fi.max, -fi.max, fi.tiny,
                     -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal,
                     fi.tiny - fi.smallest_subnormal], dt)
    nans = np.array([snan, nsnan, qnan], ui).view(dt)
    return np.concatenate([vals, nans, np.array([np.nan], dt)])


def bits(x) -> int:
    x = np.asarray(x)
    return int(x.view(FORMATS[x.dtype.type][0]))


def is_snan(x) -> bool:
    return bool(np.isnan(x)) and not bits(x) & FORMATS[np.asarray(x).dtype.type][1]


def quiet_bits(x) -> int:
    return bits(x) | FORMATS[np.asarray(x).dtype.type][1]


def ref_max(a, b, ieee: bool, smaller: bool = False) -> int | None:
    """V_MAX (V_MIN with ``smaller``) of one pair, as bits; None where both are quiet
    NaNs (which NaN then is not pinned here)."""
    if ieee and is_snan(a):
        return quiet_bits(a)
    if ieee and is_snan(b):
        return quiet_bits(b)
    na, nb = bool(np.isnan(a)), bool(np.isnan(b))
    if na and nb:
        return None
    if na:
        return bits(b)
    if nb:
        return bits(a)
    if a == 0 and b == 0:       # +0 > -0
        neg_a = math.copysign(1, float(a)) < 0
        return bits(a) if neg_a == smaller else bits(b)
    return bits(a if (a < b if smaller else a > b) else b)


@pytest.mark.parametrize("dt", list(FORMATS))
@pytest.mark.parametrize("ieee", [True, False])
def test_fmax_fmin_bits_on_every_edge_pair(dt, ieee):
    e = edges(dt)
    a, b = (np.array(v, dt) for v in zip(*itertools.product(e, e)))
    got_max, got_min = nx.fmax(a, b, ieee), nx.fmin(a, b, ieee)
    checked = 0
    for i in range(a.size):
        for got, smaller in ((got_max, False), (got_min, True)):
            want = ref_max(a[i], b[i], ieee, smaller)
            if want is None:
                assert np.isnan(got[i])
                continue
            assert bits(got[i]) == want, (hex(bits(a[i])), hex(bits(b[i])), smaller)
            checked += 1
    assert checked > 1.8 * a.size
    # a per-wave scalar operand broadcast against (w, 64): the same bits as equal shapes
    col = b.reshape(e.size, e.size)[:, :1]
    full = np.broadcast_to(col, (e.size, e.size)).copy()
    A = a.reshape(e.size, e.size)
    assert nx.fmax(A, col, ieee).tobytes() == nx.fmax(A, full, ieee).tobytes()


@pytest.mark.parametrize("dt,ftz", [(np.float16, nx.ftz16), (np.float32, nx.ftz32),
                                    (np.float64, nx.ftz64)])
def test_flush_denormals_to_signed_zero_only(dt, ftz):
    e = edges(dt)
    got = ftz(e)
    assert got.dtype == dt and not np.shares_memory(got, e)
    for x, g in zip(e, got):
        if x != 0 and abs(x) < np.finfo(dt).tiny:
            assert bits(g) == bits(np.copysign(dt(0), x))
        else:
            assert bits(g) == bits(x)
    normal = e[~((e != 0) & (np.abs(e) < np.finfo(dt).tiny))]
    out = ftz(normal)       # the path without a denormal: a copy, bit for bit
    assert out.tobytes() == normal.tobytes() and not np.shares_memory(out, normal)


@pytest.mark.parametrize("dt", list(FORMATS))
def test_transcendental_nan_rule(dt):
    e = edges(dt)
    ui = FORMATS[dt][0]
    default = {np.float16: 0xFE00, np.float32: 0xFFC00000, np.float64: 0xFFF8000000000000}[dt]
    made = np.where(np.isnan(e), dt(1), np.array(np.nan, dt))   # NaN where the input is not
    for r in (made, np.where(np.isnan(e), dt(3), e)):
        got = trans._nans(e, r)
        for x, rr, g in zip(e, r, got):
            if np.isnan(x):
                assert bits(g) == quiet_bits(x)
            elif np.isnan(rr):
                assert bits(g) == default
            else:
                assert bits(g) == bits(rr)
    finite = e[np.isfinite(e)]
    assert trans._nans(finite, finite).view(ui).tolist() == finite.view(ui).tolist()


def test_64_bit_halves():
    rng = np.random.default_rng(7)
    v = rng.integers(0, 2 ** 63, (5, 64), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    lo, hi = split64(v)
    assert (lo == (v & np.uint64(0xFFFFFFFF))).all() and (hi == v >> np.uint64(32)).all()
    assert join64(lo, hi).tobytes() == v.tobytes()
    s_lo, s_hi = split64(np.uint64(0x123456789ABCDEF0))     # a scalar: no view to take
    assert int(s_lo) == 0x9ABCDEF0 and int(s_hi) == 0x12345678
    strided = v[:, ::2]                                     # not contiguous
    assert join64(*split64(strided)).tobytes() == np.ascontiguousarray(strided).tobytes()
    mask = rng.random((3, 64)) < 0.5
    m_lo, m_hi = pack_mask(mask)
    word = [sum(1 << k for k in range(64) if mask[w, k]) for w in range(3)]
    assert [int(l) | int(h) << 32 for l, h in zip(m_lo, m_hi)] == word
