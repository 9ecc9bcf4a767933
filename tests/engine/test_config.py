"""Config: TOML into frozen dataclasses; every mistake names its key."""
from __future__ import annotations

import dataclasses

import pytest

from asmevo.engine.config import RECOMMENDED_OPERATORS, ConfigError, load_config, parse_config
from tests.engine.helpers import ROOT, config_text, write_config


def _parse(text: str):
    return parse_config(text, base_dir=ROOT)


def test_loads_into_frozen_dataclasses(tmp_path):
    cfg = load_config(write_config(tmp_path / "c.toml", budget="evaluations = 50"))
    assert cfg.engine.islands == 2 and cfg.budget.evaluations == 50
    assert [o.name for o in cfg.operators] == ["nop_remove", "swap_adjacent"]
    assert dict(cfg.operators[1].params) == {"tries": 8}
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.engine.islands = 3


@pytest.mark.parametrize("edit, key", [
    (("[engine]", "[engine]\npopsize = 3"), "engine.popsize"),
    (("islands = 2", "islands = 0"), "engine.islands"),
    (("islands = 2", 'islands = "two"'), "engine.islands"),
    (("islands = 2", "islands = true"), "engine.islands"),
    (('evaluator = "instruction-count"', 'evaluator = "magic"'), "run.evaluator"),
    (('size = "small"', 'size = "small"\ndevice = "cuda"'), "run.device"),
    (("nop_remove = 1.0", "nop_remove = -1"), "operators.nop_remove"),
    (("nop_remove = 1.0", "no_such_op = 1.0"), "operators.no_such_op"),
    (("tries = 8 }", "tries = 8, colour = 3 }"), "operators.swap_adjacent.colour"),
    (("tries = 8 }", "tries = 0 }"), "operators.swap_adjacent"),
    (("n_jobs = 1", "n_jobs = 0"), "parallel.n_jobs"),
    (("n_jobs = 1", 'n_jobs = 1\nscheduler = "localhost:8786"'), "parallel.scheduler"),
    (("[budget]", "[budget]\nevaluations = 0"), "budget.evaluations"),
    (("[budget]", "[budget]\nwall_seconds = -5"), "budget.wall_seconds"),
    (("[budget]", "[budget]\ntokens = 5"), "budget.tokens"),
    (("elite = 1", "elite = 4"), "engine.elite"),
    (("[run]", "[runn]\n[run]"), "runn"),
])
def test_bad_key_or_value_names_the_key(edit, key):
    old, new = edit
    text = config_text()
    assert old in text
    with pytest.raises(ConfigError) as exc:
        _parse(text.replace(old, new, 1))
    assert key in str(exc.value)


def test_missing_spec_and_name_are_errors():
    text = config_text()
    with pytest.raises(ConfigError, match="run.spek: unknown key"):
        _parse(text.replace("spec =", "spek ="))
    with pytest.raises(ConfigError, match="run.name: missing"):
        _parse(text.replace('name = "t"', ""))
    with pytest.raises(ConfigError, match="run.spec"):
        _parse("\n".join(ln for ln in text.splitlines() if not ln.startswith("spec")))


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[run\nname=")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(tmp_path / "bad.toml")


def test_quickstart_config_is_valid():
    cfg = load_config(ROOT / "experiments" / "quickstart.toml")
    assert cfg.run.device == "emulator" and cfg.run.size == "small"
    assert cfg.run.spec == (ROOT / "experiments" / "kernels" / "matmul_tiled").resolve()
    # it names no operators: the recommended set, as a config that names none gets
    assert {o.name: o.weight for o in cfg.operators} == RECOMMENDED_OPERATORS["amdgpu"]
    assert cfg.engine.crossover_rate > 0        # the set's crossovers take part


def test_a_config_naming_no_operators_gets_the_recommended_set(tmp_path):
    text = config_text().split("[operators]")
    rest = text[1][text[1].index("[budget]"):]
    for operators in ("", "[operators]\n\n"):
        cfg = parse_config(text[0] + operators + rest, base_dir=ROOT)
        assert {o.name: o.weight for o in cfg.operators} == RECOMMENDED_OPERATORS["amdgpu"]
    cfg = parse_config(text[0] + "[operators]\nnop_remove = 1.0\n" + rest, base_dir=ROOT)
    assert [o.name for o in cfg.operators] == ["nop_remove"]


def test_the_recommended_set_is_every_rule_operator():
    """A new rule operator joins the set (or is left out here, on purpose)."""
    import sys
    sys.path.insert(0, str(ROOT / "experiments"))
    from bench_operators import rule_operators
    assert set(RECOMMENDED_OPERATORS["amdgpu"]) == set(rule_operators())
    assert set(RECOMMENDED_OPERATORS["nvidia"]) == set(rule_operators("nvidia"))
