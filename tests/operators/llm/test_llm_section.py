"""The run config's [llm] section: shared LLM settings, per-operator overrides."""
import pytest

from asmevo.engine.config import ConfigError, parse_config
from tests.conftest import ROOT

BASE = """
[run]
name = "x"
spec = "experiments/kernels/asm_copy"
[engine]
islands = 1
population = 2
generations = 1
[operators]
llm_mutate = 1.0
llm_repair = { weight = 0.5, model = "claude-sonnet-4-6" }
[llm]
model = "claude-haiku-4-5"
"""


def test_llm_section_reaches_every_llm_operator():
    cfg = parse_config(BASE, base_dir=ROOT)
    params = {o.name: dict(o.params) for o in cfg.operators}
    assert params["llm_mutate"]["llm"] == {"model": "claude-haiku-4-5"}
    assert params["llm_repair"]["model"] == "claude-sonnet-4-6"   # its own table overrides


def test_unknown_llm_key_is_named():
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        parse_config(BASE.replace('model = "claude-haiku', 'modle = "claude-haiku'),
                     base_dir=ROOT)
