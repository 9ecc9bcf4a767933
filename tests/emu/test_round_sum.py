"""round_sum's shortcut (no midpoint, no subnormal: one float64 sum, one conversion) gives
the bits of its general path (TwoSum tie-breaking), on random, special and tie cases."""
import numpy as np
import pytest

from asmevo.emu.numerics import exact as nx


def _general(p, c, dt):
    """round_sum with the shortcut disabled."""
    real = nx._midpoint_or_tiny
    try:
        nx._midpoint_or_tiny = lambda s, d: np.ones(np.shape(s), bool)
        return nx.round_sum(p, c, dt)
    finally:
        nx._midpoint_or_tiny = real


def _cases(dt, rng, n=200_000):
    f = np.finfo(dt)
    a = rng.standard_normal(n).astype(dt).astype(np.float64)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-40, 40, n)).astype(dt).astype(np.float64)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(dt).astype(np.float64)
    p = a * b
    # sums that land on or next to midpoints of dt, and near overflow and underflow
    r = rng.standard_normal(n).astype(dt)
    mid = (r.astype(np.float64) + np.nextafter(r, dt(np.inf)).astype(np.float64)) / 2
    eps = np.ldexp(1.0, -60) * rng.choice([-1.0, 0.0, 1.0], n)
    p2, c2 = mid - eps * 0, eps * np.abs(mid)
    big = np.full(n, float(f.max)) * rng.uniform(0.99, 1.01, n)
    tiny = float(f.tiny) * rng.uniform(-2, 2, n)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, float(f.max), -float(f.max),
                         float(f.tiny), float(f.smallest_subnormal)])
    sp = np.repeat(specials, specials.size)
    sc = np.tile(specials, specials.size)
    return [(p, c), (p2, c2), (big, -big * 1e-9), (tiny, tiny * 0.5), (sp, sc),
            (p, -p + c * 1e-30)]


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_shortcut_matches_general_path(dt):
    rng = np.random.default_rng(5)
    for p, c in _cases(dt, rng):
        want = _general(p, c, dt)
        got = nx.round_sum(p, c, dt)
        assert np.array_equal(want.view(f"u{want.itemsize}"), got.view(f"u{got.itemsize}"))
