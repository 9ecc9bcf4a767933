"""The engine and evaluation reach sm_90 cubins only through the nvidia Target."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from asmevo.edits import Edit
from tests.targets.nvidia.conftest import ROOT, needs_nvdisasm

TRI_ADD = ROOT / "experiments" / "kernels" / "tri_add" / "tri_add.sm_90.cubin"
SPEC = ROOT / "experiments" / "nvidia" / "specs" / "tri_add.toml"

CONFIG = f"""
[run]
name = "nv"
spec = "{SPEC}"
size = "small"
target = "nvidia"
device = "{{device}}"
timing = "{{timing}}"
[engine]
islands = 1
population = 4
generations = 1
[operators]
sass_move = 1.0
sass_retime = 1.0
"""


def _config(device="cuda", timing="measured"):
    from asmevo.engine.config import parse_config
    return parse_config(CONFIG.format(device=device, timing=timing), base_dir=ROOT)


def test_registries_name_nvidia_pieces():
    from asmevo.runtime.registry import REGISTRY as DEVICES
    from asmevo.targets import REGISTRY, get_target
    from asmevo.targets.nvidia import NvidiaTarget
    from asmevo.operator import known_operators
    assert REGISTRY["nvidia"] is NvidiaTarget and get_target("nvidia").name == "nvidia"
    assert "cuda" in DEVICES
    assert {"sass_move", "sass_retime"} <= set(known_operators())


def test_config_checks_what_the_target_supports():
    from asmevo.engine.config import ConfigError
    assert _config().run.target == "nvidia"
    with pytest.raises(ConfigError, match="run.device"):
        _config(device="emulator", timing="measured")
    with pytest.raises(ConfigError, match="no timing model"):
        _config(timing="modeled")


@needs_nvdisasm
def test_program_cache_round_trips_through_the_target():
    from asmevo.engine.engine import ProgramCache
    from asmevo.engine.individual import Individual
    from asmevo.targets import get_target
    from asmevo.verify.pipeline import candidate
    from asmevo.operators.rules.sass import SassMove, SassRetime
    from asmevo.operator import OperatorContext

    t = get_target("nvidia")
    cache = ProgramCache(str(TRI_ADD), target="nvidia")
    k0 = cache.get(())
    assert t.build(k0, k0) == TRI_ADD.read_bytes()
    co = t.load(TRI_ADD.read_bytes(), path=str(TRI_ADD))
    edits = ()
    for n, op in enumerate([SassMove(), SassRetime(), SassMove()]):
        ind = Individual(f"i{n}", edits)
        ctx = OperatorContext(k0=k0, kernel="tri_add", rng=random.Random(n), program_of=cache)
        edit = op.mutate(ind, ctx)
        assert isinstance(edit, Edit), ctx.reasons
        edits = edits + (edit,)
    prog = cache.get(edits)
    assert prog == t.apply_edits(k0, edits)        # incremental == from scratch
    program, data, verdict = candidate(t, k0, edits, co)
    assert verdict is None and data == t.build(k0, prog) and data != TRI_ADD.read_bytes()
    assert t.static_gate(prog, co) is None
    assert t.abi_diff(co, t.load(data, path="k1")) == []
    assert "tri_add" in t.assembly(prog)


@needs_nvdisasm
def test_search_stops_at_the_device_with_one_clear_error(tmp_path):
    """Everything up to the GPU runs here; then one DeviceError, never a fallback."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run
    from asmevo.runtime.device import DeviceError
    from asmevo.runtime.registry import get_device
    try:
        get_device("cuda")
        pytest.skip("a usable NVIDIA GPU is present")
    except DeviceError:
        pass
    config = _config()
    with create_run(config, Path(tmp_path) / "run") as run:
        # isolated like every device (spawned children on a GPU: see verify/evaluate.py)
        assert run.evaluator.target == "nvidia" and run.evaluator.context.isolate is True
        engine = open_engine(run)
        try:
            assert engine.programs.k0.kernel("tri_add").instructions
            with pytest.raises(DeviceError):
                engine.run()
        finally:
            engine.pool.close()
