"""Providers: the OpenAI-compatible protocol (request translation, answers, usage, retries,
keys), and where a request may go (base_url)."""
from __future__ import annotations

import json

import pytest

from asmevo.operators.llm.answer import Answer, ToolUse, from_chat_completion, from_messages_api
from asmevo.operators.llm.client import NO_KEY, LLMClient, api_key_from_env, wire_body
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.openai_wire import chat_body, chat_usage
from asmevo.operators.llm.pricing import Price, Usage
from tests.operators.llm.conftest import FAKE_KEY, tool_answer

ZERO = (("local-coder", Price(0.0, 0.0, 0.0, 0.0)),)
REQUEST = {
    "model": "m", "max_tokens": 50, "temperature": 0.2,
    "system": [{"type": "text", "text": "notes", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "kernel"}],
    "tools": [{"name": "show", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "any"},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "t1", "name": "show", "input": {"b": 2, "a": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "listing"},
            {"type": "text", "text": "[1 turn used]", "cache_control": {"type": "ephemeral"}}]}]}


def test_chat_body_translates_every_part():
    body = chat_body(REQUEST)
    assert body["model"] == "m" and body["max_tokens"] == 50 and body["temperature"] == 0.2
    assert body["tool_choice"] == "required"
    assert body["tools"] == [{"type": "function", "function": {
        "name": "show", "description": "d", "parameters": {"type": "object"}}}]
    assert body["messages"] == [
        {"role": "system", "content": "notes\n\nkernel"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "looking", "tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "show", "arguments": '{"a":1,"b":2}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "listing"},
        {"role": "user", "content": "[1 turn used]"}]
    assert "cache_control" not in json.dumps(body)
    named = chat_body(REQUEST | {"tool_choice": {"type": "tool", "name": "show"}})
    assert named["tool_choice"] == {"type": "function", "function": {"name": "show"}}
    cfg = LLMConfig(provider="openai", model="local-coder", prices=ZERO,
                    base_url="http://127.0.0.1:9/v1")
    assert wire_body(cfg, REQUEST) == body and wire_body(LLMConfig(), REQUEST) is REQUEST


def test_answers_and_usage_from_either_protocol():
    msg = {"content": [{"type": "text", "text": "hi"},
                       {"type": "tool_use", "id": "a", "name": "show", "input": {"x": 1}}],
           "stop_reason": "tool_use"}
    want = Answer("hi", (ToolUse("a", "show", {"x": 1}),), "tool_use")
    assert from_messages_api(msg) == want == Answer.from_json(want.to_json())
    comp = {"choices": [{"finish_reason": "tool_calls", "message": {
        "content": "hi", "tool_calls": [{"id": "a", "function": {
            "name": "show", "arguments": '{"x": 1}'}}]}}]}
    assert from_chat_completion(comp) == Answer("hi", want.tool_uses, "tool_calls")
    assert from_chat_completion({"choices": []}).tool_uses == ()
    # prompt_tokens includes the cached ones: fresh input excludes them
    assert chat_usage({"prompt_tokens": 1000, "completion_tokens": 50,
                       "prompt_tokens_details": {"cached_tokens": 800}}) == Usage(200, 50, 0, 800)
    assert chat_usage({"prompt_tokens": 7}) == Usage(7, 0, 0, 0)


def test_openai_client_retries_and_reads_tool_calls(replay):
    srv = replay([{"kind": "error", "status": 429, "retry_after": "0"},
                  {"kind": "error", "status": 503}, tool_answer(["s_endpgm"])])
    cfg = LLMConfig(provider="openai", model="local-coder", prices=ZERO,
                    base_url=srv.base_url + "/v1", backoff_base_s=0.0, max_retries=3)
    sleeps = []
    r = LLMClient(cfg, api_key=FAKE_KEY, sleep=sleeps.append).send(REQUEST, seed="c1")
    assert r.ok and r.http_attempts == 3 and len(sleeps) == 2
    assert r.answer.tool_uses[0].input == {"replacement": ["s_endpgm"], "rationale": "why"}
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    got = srv.received[-1]
    assert got.headers["x-asmevo-call-id"] == "c1" and got.body == chat_body(REQUEST)
    assert FAKE_KEY not in got.raw


def test_openai_errors_are_reasons_without_the_key(replay):
    srv = replay([{"kind": "error", "status": 401, "message": f"bad key {FAKE_KEY}"}])
    cfg = LLMConfig(provider="openai", model="local-coder", prices=ZERO,
                    base_url=srv.base_url + "/v1")
    r = LLMClient(cfg, api_key=FAKE_KEY).send(REQUEST, seed="c2")
    assert not r.ok and r.reason.startswith("API call failed: HTTP 401: bad key")
    assert FAKE_KEY not in r.reason


def test_the_key_comes_from_the_variable_the_config_names(monkeypatch):
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-gw")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    cfg = LLMConfig(provider="openai", model="local-coder", prices=ZERO,
                    api_key_env="MY_GATEWAY_KEY")
    assert api_key_from_env(cfg) == "sk-gw"
    monkeypatch.delenv("MY_GATEWAY_KEY")
    with pytest.raises(LLMError, match="set MY_GATEWAY_KEY in the environment"):
        api_key_from_env(cfg)
    # a server that needs no key: nothing is read, the SDK gets the placeholder
    local = LLMConfig(provider="openai", model="local-coder", prices=ZERO,
                      base_url="http://localhost:8000/v1", api_key_env="")
    assert api_key_from_env(local) is None
    c = LLMClient(local)
    assert c._sdk.api_key == NO_KEY and "sk-openai" not in repr(c)


@pytest.mark.parametrize("url, key_env, ok", [
    ("https://api.example.com/v1", "OPENAI_API_KEY", True),
    ("http://127.0.0.1:8000/v1", "OPENAI_API_KEY", True),
    ("http://localhost:11434/v1", "", True),
    ("http://[::1]:8000/v1", "OPENAI_API_KEY", True),
    ("http://192.168.1.20:8000/v1", "", True),           # a LAN box, no key: allowed
    ("http://10.1.2.3:8000/v1", "OPENAI_API_KEY", False),  # a key in clear over a network
    ("http://gpu-box.lan:8000/v1", "", False),            # a name may resolve anywhere
    ("http://example.com/v1", "", False),
    ("https://user:secret@api.example.com/v1", "OPENAI_API_KEY", False),
    ("https://api.example.com/v1?key=x", "OPENAI_API_KEY", False),
    ("ftp://127.0.0.1/", "OPENAI_API_KEY", False),
    ("https://api.example.com/v1", "", False),            # no key only for own servers
])
def test_where_a_request_may_go(url, key_env, ok):
    make = lambda: LLMConfig(provider="openai", model="local-coder", prices=ZERO,  # noqa: E731
                             base_url=url, api_key_env=key_env)
    if ok:
        assert make().base_url == url
    else:
        with pytest.raises(LLMError, match="base_url|api_key_env"):
            make()


def test_provider_defaults_and_errors():
    o = LLMConfig.from_table({"provider": "openai", "model": "local-coder",
                              "prices": {"local-coder": {"input": 0, "output": 0}}})
    assert o.base_url == "https://api.openai.com/v1" and o.api_key_env == "OPENAI_API_KEY"
    assert o.price == Price(0.0, 0.0, 0.0, 0.0)
    assert LLMConfig().api_key_env == "ANTHROPIC_API_KEY"
    with pytest.raises(LLMError, match="provider must be one of anthropic, openai"):
        LLMConfig.from_table({"provider": "gemini"})
    with pytest.raises(LLMError, match='provider "openai" needs a model name'):
        LLMConfig.from_table({"provider": "openai"})
    with pytest.raises(LLMError, match='prices."Qwen/Qwen2.5-Coder-7B".*0 and 0 for a model '
                                       'served locally'):
        LLMConfig.from_table({"provider": "openai", "model": "Qwen/Qwen2.5-Coder-7B"})
    with pytest.raises(LLMError, match="api_key_env must name an environment variable"):
        LLMConfig.from_table({"api_key_env": "$(cat ~/.key)"})
    for k, v in (("max_turns", 0), ("max_tries", -1), ("max_conversation_dollars", -1.0),
                 ("force_tools", "yes")):
        with pytest.raises(LLMError, match=k):
            LLMConfig.from_table({k: v})


@pytest.mark.parametrize("url, key_env, hosts, ok", [
    ("http://vllm:8000/v1", "", ["vllm"], True),                # a compose service, no key
    ("http://VLLM.:8000/v1", "", ["vllm"], True),               # spelled as DNS allows
    ("http://gpu-box.lan:8000/v1", "", ["gpu-box.lan"], True),
    ("http://203.0.113.7:8000/v1", "", ["203.0.113.7"], True),  # a public address, named
    ("https://vllm:8443/v1", "", ["vllm"], True),               # no key needed by own server
    ("http://vllm:8000/v1", "", [], False),                     # not named: refused
    ("http://vllm:8000/v1", "", ["other"], False),
    ("http://vllm.evil.com:8000/v1", "", ["vllm"], False),      # exactly the name given
    ("http://vllm:8000/v1", "OPENAI_API_KEY", ["vllm"], False),  # never a key in clear
])
def test_plain_http_to_a_host_the_user_names(url, key_env, hosts, ok):
    make = lambda: LLMConfig.from_table(  # noqa: E731
        {"provider": "openai", "model": "local-coder", "base_url": url, "api_key_env": key_env,
         "allow_http_hosts": hosts, "prices": {"local-coder": {"input": 0, "output": 0}}})
    if ok:
        assert make().allow_http_hosts == tuple(hosts)
    else:
        with pytest.raises(LLMError, match="base_url|api_key_env"):
            make()


@pytest.mark.parametrize("hosts", ["vllm", ["http://vllm"], ["vllm:8000"], ["*.lan"], [""],
                                   [3], ["a b"]])
def test_allow_http_hosts_names_machines_only(hosts):
    with pytest.raises(LLMError, match="allow_http_hosts"):
        LLMConfig.from_table({"allow_http_hosts": hosts})


def test_a_new_wire_protocol_is_one_class_and_one_registry_line(monkeypatch):
    from asmevo.operators.llm.anthropic_wire import MessagesApi
    from asmevo.operators.llm.providers import PROVIDERS

    class Tagged(MessagesApi):        # the module a new protocol would be
        name = "tagged"
        default_url = "http://127.0.0.1:9"
        default_key_env = ""

        def body(self, request):
            return {**request, "metadata": {"wire": "tagged"}}
    monkeypatch.setitem(PROVIDERS, "tagged", Tagged())       # the registry line
    cfg = LLMConfig(provider="tagged")
    assert cfg.base_url == "http://127.0.0.1:9" and cfg.api_key_env == ""
    assert wire_body(cfg, REQUEST)["metadata"] == {"wire": "tagged"}
    assert "provider='tagged'" in repr(LLMClient(cfg))
    with pytest.raises(LLMError, match="provider must be one of anthropic, openai, tagged"):
        LLMConfig(provider="other")
