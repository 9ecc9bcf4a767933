"""Frozen inputs: read-only, hashed once, and never mistaken for another array."""
import numpy as np
import pytest

from asmevo.launch import frozen
from asmevo.launch.spec import load_spec
from asmevo.verify.inputs import make_inputs, poisoned
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_freeze_makes_read_only_and_digest_follows_the_bytes():
    a = frozen.freeze(np.arange(10, dtype=np.float32))
    b = frozen.freeze(np.arange(10, dtype=np.float32))
    c = frozen.freeze(np.arange(1, 11, dtype=np.float32))
    with pytest.raises(ValueError):
        a[0] = 1
    assert frozen.digest(a) == frozen.digest(b) != frozen.digest(c)
    assert frozen.digest(np.arange(10, dtype=np.float32)) is None     # not frozen
    with pytest.raises(ValueError):
        frozen.freeze(np.arange(10)[2:])                              # a view


def test_a_view_or_an_array_made_writeable_again_is_hashed_each_time():
    a = frozen.freeze(np.zeros(4, np.uint32))
    assert frozen.digest(a[1:]) is None
    a.setflags(write=True)
    a[0] = 7
    assert frozen.digest(a) is None


def test_poisoned_buffers_are_shared_read_only_and_follow_the_poison():
    spec = load_spec(ROOT / "experiments" / "kernels" / "softmax", "small")
    values = make_inputs(spec, 0)
    p1, p2 = poisoned(spec, values, 0xA5), poisoned(spec, values, 0xA5)
    p3 = poisoned(spec, values, 0x3C)
    out = next(a.name for a in spec.buffers if a.output)
    assert p1[out] is p2[out] and p1 is not p2          # the arrays shared, the dict not
    assert not p1[out].flags.writeable
    assert (p1[out].view(np.uint8) == 0xA5).all() and (p3[out].view(np.uint8) == 0x3C).all()
    other = {**values}
    assert poisoned(spec, other, 0xA5)[out] is not p1[out]   # another input set
