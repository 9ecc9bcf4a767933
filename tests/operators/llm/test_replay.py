"""The replay server itself: matching, scripted faults, simulated prompt caching."""
from __future__ import annotations

import json

import anthropic
import pytest

from asmevo.operators.llm.replay import ReplayServer, load_script
from tests.operators.llm.conftest import DATA, FAKE_KEY


def sdk(srv):
    return anthropic.Anthropic(api_key=FAKE_KEY, base_url=srv.base_url, max_retries=0, timeout=5)


def ask(c, text, system="S" * 6000):
    return c.messages.create(model="claude-haiku-4-5", max_tokens=10,
                             system=[{"type": "text", "text": system,
                                      "cache_control": {"type": "ephemeral"}}],
                             messages=[{"role": "user", "content": text}],
                             tools=[{"name": "propose_edit", "input_schema": {"type": "object"}}])


def test_matching_by_key_and_order():
    with ReplayServer([{"kind": "text", "text": "B", "match": {"contains": ["beta"]}},
                       {"kind": "text", "text": "A"}]) as srv:
        c = sdk(srv)
        assert ask(c, "alpha").content[0].text == "A"
        assert ask(c, "beta").content[0].text == "B"
        with pytest.raises(anthropic.BadRequestError, match="no recorded exchange"):
            ask(c, "gamma")
        assert srv.unused == []


def test_simulated_cache_write_then_read():
    with ReplayServer([{"kind": "tool_use", "input": {}, "repeat": -1}]) as srv:
        c = sdk(srv)
        u1, u2 = ask(c, "one").usage, ask(c, "two").usage
        assert u1.cache_creation_input_tokens > 1000 and u1.cache_read_input_tokens == 0
        assert u2.cache_read_input_tokens == u1.cache_creation_input_tokens
        assert u2.cache_creation_input_tokens == 0


def test_recorded_scripts_load():
    for p in DATA.glob("*.json"):
        assert load_script(p), p
    with pytest.raises(ValueError):
        load_script([1, 2])


def test_tool_use_shape_matches_the_sdk():
    with ReplayServer([{"kind": "tool_use", "input": {"replacement": ["s_nop 0"],
                                                      "rationale": "x"}}]) as srv:
        m = ask(sdk(srv), "x")
        assert m.stop_reason == "tool_use" and m.content[0].name == "propose_edit"
        assert m.content[0].input == {"replacement": ["s_nop 0"], "rationale": "x"}
        assert json.loads(srv.received[0].raw)["tools"][0]["name"] == "propose_edit"
