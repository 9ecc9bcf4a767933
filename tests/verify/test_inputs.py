"""Input sets reach every path: special values in every lane position and in whole
rows, element types decoded right, scalars drawn from their domains."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.launch.dtypes import (FLOATS, bits_dtype, decode, encode, path_values,
                                  special_values)
from asmevo.verify.inputs import input_sets, run_lengths
from asmevo.launch.spec import load_spec
from tests.conftest import KERNELS


@pytest.mark.parametrize("dtype", sorted(FLOATS))
def test_every_special_value_is_what_it_says(dtype):
    f = FLOATS[dtype]
    sv = special_values(dtype)
    v = decode(sv, dtype)
    bits = [int(b) for b in sv.view(bits_dtype(dtype))]
    assert len(set(bits)) == len(bits)
    assert np.isnan(v).sum() >= (4 if f.kind == "ieee" else 1)
    if f.kind == "ieee":
        assert np.isposinf(v).any() and np.isneginf(v).any()
        quiet = 1 << (f.man - 1)
        nan_bits = [b for b, x in zip(bits, v) if np.isnan(x)]
        assert any(b & quiet == 0 for b in nan_bits), "a signalling NaN"
        assert len({b & (quiet - 1) for b in nan_bits if b & quiet}) >= 2, "several payloads"
    assert (v == 0).sum() == (1 if f.kind == "fnuz" else 2)
    finite = np.abs(v[np.isfinite(v)])
    assert finite[finite > 0].min() == 2.0 ** (1 - f.bias - f.man)      # smallest denormal
    assert (decode(encode(v[np.isfinite(v)], dtype), dtype) == v[np.isfinite(v)]).all()


def test_integer_special_values():
    assert set(special_values("int32").tolist()) >= {0, 1, -1, 2**31 - 1, -2**31}
    assert set(special_values("uint64").tolist()) >= {0, 1, 2**64 - 1, 2**63}


def test_every_special_value_in_every_lane_position():
    spec = load_spec(KERNELS / "vector_add", "small")
    sets = dict(input_sets(spec))
    a = sets["special"]["a"]
    sv = special_values("float32").view(np.uint32)
    lanes = np.arange(a.size) % 64
    bits = a.view(np.uint32)
    for s in sv:
        assert set(lanes[bits == s]) == set(range(64)), hex(int(s))
    assert not np.array_equal(np.flatnonzero(bits == sv[0])[:3] % 7, [0, 0, 0])


def test_whole_rows_and_groups_of_one_special_value():
    spec = load_spec(KERNELS / "row_max", "small")         # 8 rows of 500, 256 work-items
    assert run_lengths(spec, 4000) == [500, 256, 64]
    sets = dict(input_sets(spec))
    rows = sets["special_rows"]["x"].reshape(8, 500)
    assert np.isneginf(rows[0]).all() or np.isneginf(rows[1]).all()
    full = [r for r in rows if (r.view(np.uint32) == r.view(np.uint32)[0]).all()]
    assert len(full) >= 3
    inner = sets["special_rows_inner"]
    cols = inner["cols"]
    assert cols < 256 and cols % 64                            # fewer columns than work-items
    x = inner["x"][: 8 * cols].reshape(8, cols)
    assert any(np.isneginf(r).all() for r in x)               # a whole row of -inf at that width
    assert path_values("float32").view(np.uint32)[0] == 0xFF800000


def test_scalar_draws_differ_per_input_set():
    spec = load_spec(KERNELS / "softmax", "small")
    cols = [v["cols"] for _, v in input_sets(spec)]
    assert cols[0] == 500 and len(set(cols)) >= 4 and min(cols) == 1
