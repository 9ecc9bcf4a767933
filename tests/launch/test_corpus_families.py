"""Every corpus and naive spec declares the launches its kernel is used with (a
``[family]``), the sizes it names lie in that family, and verification finds members
in it; on a few fast kernels, K0 matches the reference at the family's smallest launch
(the whole family: ``experiments/check_families.py``)."""
import tomllib

import numpy as np
import pytest

from asmevo.emu import run_launch
from asmevo.launch import family
from asmevo.launch.check import check_outputs
from asmevo.launch.spec import family_space, make_inputs
from tests.conftest import KERNELS

NAIVE = KERNELS.parent / "kernels_naive"
SPECS = sorted(KERNELS.glob("*/spec.toml")) + sorted(NAIVE.glob("*/spec.toml"))
FAST = ["vector_add", "relu", "softmax", "tri_add", "tri_rotary", "asm_scale",
        "aiter_topksoftmax", "naive/matmul", "naive/groupnorm", "naive/maxpool2d"]


@pytest.fixture(autouse=True)
def _bounded_search(monkeypatch):
    """The edge members' searches bounded: these tests ask whether a family has members,
    not which ones (every member against the reference: check_families.py); the full
    searches cost 20 s of CPU over the two sets."""
    monkeypatch.setattr(family, "MAX_SEARCH", 300)


def _id(p):
    return ("naive/" if p.parent.parent == NAIVE else "") + p.parent.name


def test_both_sets_are_there():
    assert len(SPECS) >= 80 and any(p.parent.parent == NAIVE for p in SPECS)


@pytest.mark.parametrize("path", SPECS, ids=_id)
def test_every_spec_declares_a_family_holding_its_sizes(path):
    doc = tomllib.loads(path.read_text())
    assert "family" in doc, f"{_id(path)}: no [family]"
    space = family_space(path, "small")           # raises if small is not a member
    assert not space.family.derived
    assert space.family.outside(space.base) is None
    params = doc.get("params", {})
    for name, table in doc.get("sizes", {}).items():
        why = space.family.outside({**params, **table})
        assert why is None, f"{_id(path)}: size {name} is not in the family: {why}"
    assert space.members(0), f"{_id(path)}: the family has no members"


@pytest.mark.parametrize("name", FAST)
def test_k0_matches_the_reference_at_the_smallest_launch(name):
    path = (NAIVE / name[6:] if name.startswith("naive/") else KERNELS / name) / "spec.toml"
    space = family_space(path, "small")
    smallest = [m for m in space.members(0) if m.why == "the smallest launch"]
    assert smallest, f"{name}: no smallest launch among the members"
    spec = space.resolve(smallest[0])
    inputs = make_inputs(spec, 0)
    res = run_launch(spec.code_object, spec, inputs)
    assert res.ok, res.message
    want = spec.expected({k: (v.copy() if isinstance(v, np.ndarray) else v)
                          for k, v in inputs.items()})
    bad = [c.detail for c in check_outputs(spec, res.outputs, want) if not c.ok]
    assert not bad, f"{name} at {smallest[0].label}: {bad}"
