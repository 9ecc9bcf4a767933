"""[llm] config and the price table."""
from __future__ import annotations

import pytest

from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.pricing import Price, Usage, cost


def test_defaults_are_valid_and_priced():
    c = LLMConfig()
    assert c.price == Price(3.0, 15.0, 3.75, 0.30)
    assert c.prompt_cache and c.max_retries >= 1


def test_unknown_key_is_named():
    with pytest.raises(LLMError, match="unknown key 'modle'"):
        LLMConfig.from_table({"modle": "claude-sonnet-4-5"})


def test_unknown_price_key_is_named():
    with pytest.raises(LLMError, match="unknown key 'cache_wirte'"):
        LLMConfig.from_table({"prices": {"m": {"input": 1, "output": 2, "cache_wirte": 3}}})


def test_model_without_price_is_an_error_that_says_what_to_add():
    with pytest.raises(LLMError, match=r'\[llm.prices."my-model"\]'):
        LLMConfig.from_table({"model": "my-model"})


def test_from_toml_with_prices(tmp_path):
    p = tmp_path / "run.toml"
    p.write_text('[operators]\nllm_mutate = 1.0\n\n[llm]\nmodel = "my-model"\nmax_tokens = 1000\n'
                 'temperature = 0.2\n[llm.prices.my-model]\ninput = 2\noutput = 10\n')
    c = LLMConfig.from_toml(p)
    assert c.model == "my-model" and c.max_tokens == 1000 and c.temperature == 0.2
    # cache prices default to the provider's rule: writes 1.25x input, reads 0.1x input
    assert c.price == Price(2.0, 10.0, 2.5, 0.2)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(LLMError, match="cannot read config .No such file"):
        LLMConfig.from_toml(tmp_path / "nope.toml")


@pytest.mark.parametrize("table, key", [({"max_tokens": 0}, "max_tokens"),
                                        ({"temperature": 3.0}, "temperature"),
                                        ({"base_url": "http://example.com"}, "base_url"),
                                        ({"max_retries": -1}, "max_retries")])
def test_bad_values(table, key):
    with pytest.raises(LLMError, match=key):
        LLMConfig.from_table(table)


def test_cost_uses_all_four_token_kinds():
    u = Usage(input_tokens=1_000, output_tokens=200, cache_creation_input_tokens=4_000,
              cache_read_input_tokens=10_000)
    p = Price(3.0, 15.0, 3.75, 0.30)
    assert cost(u, p) == pytest.approx((1000 * 3 + 200 * 15 + 4000 * 3.75 + 10000 * 0.3) / 1e6)


def test_usage_from_sdk_object_and_dict():
    class U:
        input_tokens, output_tokens = 5, 6
        cache_creation_input_tokens, cache_read_input_tokens = None, 7
    assert Usage.from_response(U()) == Usage(5, 6, 0, 7)
    assert Usage.from_response({"input_tokens": 1}) == Usage(1, 0, 0, 0)
