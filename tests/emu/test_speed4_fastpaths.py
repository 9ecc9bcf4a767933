"""The speed4 round's shortcuts give what the straightforward computation gives, bit for
bit: each test runs the shortcut and a plain reference on the same data (NaNs and
special elements present and absent, partial EXEC, broadcast operands)."""
import numpy as np
import pytest

from asmevo.emu import numerics as nx


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}")


def _round_sum_by_nonzero(p, c, dt):
    """round_sum as it was: the special elements by np.nonzero of the 2-D mask."""
    with np.errstate(all="ignore"):
        p = np.asarray(p, np.float64)
        c = np.asarray(c, np.float64)
        s = p + c
        special = nx._midpoint_or_tiny(s, dt)
        if not np.any(special):
            return np.asarray(s.astype(dt), dt)
        at = np.nonzero(special)
        r = np.asarray(s.astype(dt), dt)
        r[at] = nx._round_sum_general(np.broadcast_to(p, s.shape)[at],
                                      np.broadcast_to(c, s.shape)[at], s[at], dt)
        return r


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("cshape", ["full", "scalar", "column", "fortran"])
def test_round_sum_flat_indices(dt, cshape):
    rng = np.random.default_rng(11)
    w = 37
    f = np.finfo(dt)
    r = rng.standard_normal((w, 64)).astype(dt)
    mid = (r.astype(np.float64) + np.nextafter(r, dt(np.inf)).astype(np.float64)) / 2
    p = np.where(rng.random((w, 64)) < 0.3, mid, rng.standard_normal((w, 64)))
    p = np.where(rng.random((w, 64)) < 0.1, float(f.tiny) * 0.25, p)
    p = np.where(rng.random((w, 64)) < 0.05, np.nan, p)
    if cshape == "full":
        c = rng.standard_normal((w, 64)) * 2.0 ** -70
    elif cshape == "scalar":
        c = np.float64(2.0 ** -80)
    elif cshape == "column":
        c = rng.standard_normal((w, 1)) * 2.0 ** -75
    else:
        c = np.asfortranarray(rng.standard_normal((w, 64)) * 2.0 ** -70)
        p = np.asfortranarray(p)
    want = _round_sum_by_nonzero(p, c, dt)
    got = nx.round_sum(p, c, dt)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(_bits(want), _bits(got))
    # no special element: the shortcut as before
    q = rng.standard_normal((w, 64))
    assert np.array_equal(_bits(_round_sum_by_nonzero(q, q, dt)), _bits(nx.round_sum(q, q, dt)))

