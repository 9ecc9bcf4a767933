"""A new device is one module and one registry line: everything else follows."""
from __future__ import annotations

import pytest

from tests.conftest import KERNELS
from tests.runtime.fake_device import FakeDevice


@pytest.fixture
def fake(monkeypatch):
    from asmevo.runtime.registry import REGISTRY
    monkeypatch.setitem(REGISTRY, "fake", FakeDevice)      # the one registry line
    FakeDevice.launches = 0


def test_a_registered_device_is_a_choice_of_the_commands_and_the_config(fake, tmp_path):
    from asmevo.cli import _parser as build_parser
    from asmevo.engine.config import parse_config
    from asmevo.runtime.registry import default_timing, get_device
    assert isinstance(get_device("fake"), FakeDevice) and default_timing("fake") == "modeled"
    args = build_parser().parse_args(["verify", "s", "k0", "k1", "--device", "fake"])
    assert args.device == "fake"
    cfg = parse_config(f'[run]\nname = "f"\nspec = "{KERNELS / "vector_add"}"\n'
                       'device = "fake"\n[operators]\npeephole = 1.0\n', base_dir=tmp_path)
    assert cfg.run.device == "fake" and not cfg.gpu


def test_a_registered_device_verifies_a_candidate(fake):
    from asmevo.launch.spec import load_spec
    from asmevo.verify.evaluate import EvalContext, evaluate_code
    spec = load_spec(KERNELS / "vector_add", "small")
    ctx = EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", device="fake",
                      timing="none", isolate=False, family=False)
    ev = evaluate_code(ctx, spec.code_object.read_bytes())
    assert ev.verdict.equal, ev.verdict
    assert FakeDevice.launches > 0          # it ran there, one launch at a time


def test_an_operator_for_another_target_is_refused(tmp_path):
    from asmevo.engine.config import ConfigError, parse_config
    with pytest.raises(ConfigError, match="edits nvidia programs, not amdgpu"):
        parse_config(f'[run]\nname = "f"\nspec = "{KERNELS / "vector_add"}"\n'
                     '[operators]\nsass_move = 1.0\n', base_dir=tmp_path)
