"""emulate --check: bits for exact specs (lossless for uint64), a NaN-equal mode."""
from __future__ import annotations

import numpy as np

from asmevo.launch.check import check_outputs
from asmevo.launch.spec import ArgSpec, LaunchSpec


def _spec(dtype: str, atol: float = 0.0) -> LaunchSpec:
    return LaunchSpec("t", "k", None, (1, 1, 1), (64, 1, 1),
                      (ArgSpec("y", "buffer", dtype, 4, output=True),), atol=atol, rtol=0.0)


def test_uint64_compares_losslessly():
    spec = _spec("uint64")
    got = np.array([2**64 - 1, 2**63 + 1, 0, 7], np.uint64)
    want = np.array([2**64 - 2, 2**63 + 1, 0, 7], np.uint64)   # equal as float64
    assert np.float64(got[0]) == np.float64(want[0])
    (c,) = check_outputs(spec, {"y": got}, {"y": want})
    assert not c.ok and "y[0]" in c.detail
    (c,) = check_outputs(spec, {"y": got}, {"y": got.copy()})
    assert c.ok


def test_exact_float_is_bits_and_nan_equal_is_a_mode():
    spec = _spec("float32")
    got = np.array([0.0, 1.0, np.nan, 2.0], np.float32)
    got.view(np.uint32)[2] = 0x7FC00123                          # a NaN with a payload
    want = np.array([-0.0, 1.0, np.nan, 2.0])
    (c,) = check_outputs(spec, {"y": got}, {"y": want}, nan_equal=True)
    assert not c.ok and "y[0]" in c.detail                       # -0 is not +0
    want[0] = 0.0
    (strict,) = check_outputs(spec, {"y": got}, {"y": want})
    (loose,) = check_outputs(spec, {"y": got}, {"y": want}, nan_equal=True)
    assert not strict.ok and "y[2]" in strict.detail and loose.ok


def test_tolerance_decodes_carriers_and_compares_a_prefix():
    from asmevo.launch.dtypes import encode
    spec = _spec("bfloat16", atol=1e-2)
    got = encode([1.0, -2.5, 3.0, 99.0], "bfloat16")
    (c,) = check_outputs(spec, {"y": got}, {"y": np.array([1.0, -2.5, 3.0])})
    assert c.ok and "3 elements" in c.detail                     # element 3 is not compared
    (c,) = check_outputs(spec, {"y": got}, {"y": np.array([1.0, -2.5, 3.5])})
    assert not c.ok
    inf = encode([np.inf, 1, 1, 1], "bfloat16")
    assert check_outputs(spec, {"y": inf}, {"y": np.array([np.inf, 1, 1, 1])})[0].ok
