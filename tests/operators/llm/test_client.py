"""Retries, backoff, failures as values, and the API key's secrecy."""
from __future__ import annotations

import logging

import pytest

from asmevo.operators.llm.client import LLMClient, api_key_from_env, backoff_delays
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from tests.operators.llm.conftest import FAKE_KEY, config_for, tool_answer

REQ = {"model": "claude-haiku-4-5", "max_tokens": 100,
       "messages": [{"role": "user", "content": "hi"}]}


def client(srv, sleeps, **kw):
    return LLMClient(config_for(srv, **kw), api_key=FAKE_KEY, sleep=sleeps.append)


def test_retries_then_success(replay):
    srv = replay([{"kind": "error", "status": 429, "retry_after": "0"}, {"kind": "overloaded"},
                  {"kind": "error", "status": 500}, tool_answer(["s_endpgm"])])
    sleeps = []
    r = client(srv, sleeps).send(REQ, seed="call-1")
    assert r.ok and r.http_attempts == 4
    assert r.answer.tool_uses[0].input["replacement"] == ["s_endpgm"]
    assert len(srv.received) == 4 and all(x.had_api_key for x in srv.received)
    # jittered exponential backoff, reproducible from the seed
    assert sleeps == backoff_delays(config_for(srv), "call-1")[:3]


def test_backoff_is_deterministic_exponential_and_capped(replay):
    srv = replay([])
    cfg = config_for(srv, backoff_base_s=1.0, backoff_max_s=5.0, backoff_jitter=0.5, max_retries=5)
    a, b = backoff_delays(cfg, "x"), backoff_delays(cfg, "x")
    assert a == b and a != backoff_delays(cfg, "y")
    for k, d in enumerate(a):
        nominal = min(5.0, 2.0 ** k)
        assert 0.5 * nominal <= d <= 1.5 * nominal


def test_retry_after_header_lengthens_the_wait_up_to_the_cap(replay):
    srv = replay([{"kind": "error", "status": 429, "retry_after": "7"}, tool_answer(["s_endpgm"])])
    sleeps = []
    assert client(srv, sleeps, backoff_max_s=0.05).send(REQ, seed="s").ok
    assert sleeps == [0.05]


def test_truncated_body_is_retried(replay):
    srv = replay([{"kind": "truncated"}, tool_answer(["s_endpgm"])])
    r = client(srv, []).send(REQ, seed="s")
    assert r.ok and r.http_attempts == 2


def test_retries_exhausted_is_a_failed_reply_not_an_exception(replay):
    srv = replay([{"kind": "overloaded", "repeat": -1}])
    r = client(srv, [], max_retries=2).send(REQ, seed="s")
    assert not r.ok and r.http_attempts == 3
    assert "retries exhausted after 3 attempts" in r.reason and "overloaded" in r.reason


@pytest.mark.parametrize("script, text", [
    ([{"kind": "malformed"}], "malformed response"),
    ([{"kind": "error", "status": 400, "message": "bad request body"}], "HTTP 400"),
    ([{"kind": "error", "status": 401, "message": "invalid x-api-key"}], "HTTP 401"),
])
def test_non_retryable_failures(replay, script, text):
    srv = replay(script)
    r = client(srv, []).send(REQ, seed="s")
    assert not r.ok and r.http_attempts == 1 and text in r.reason


def test_usage_comes_from_the_response(replay):
    usage = {"input_tokens": 11, "output_tokens": 22, "cache_creation_input_tokens": 33,
             "cache_read_input_tokens": 44}
    srv = replay([tool_answer(["s_endpgm"], usage=usage)])
    r = client(srv, []).send(REQ, seed="s")
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_creation_input_tokens,
            r.usage.cache_read_input_tokens) == (11, 22, 33, 44)


def test_temperature_reaches_the_wire(replay):
    srv = replay([tool_answer(["s_endpgm"])])
    assert client(srv, []).send(dict(REQ, temperature=0.3), seed="s").ok
    assert srv.received[0].body["temperature"] == 0.3


def test_key_comes_only_from_the_environment(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY") as e:
        api_key_from_env()
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    assert api_key_from_env() == FAKE_KEY
    assert FAKE_KEY not in str(e.value)


def test_key_never_in_reasons_logs_or_repr(replay, caplog, fake_key):
    caplog.set_level(logging.DEBUG)          # the SDK's own debug logging too
    # the server echoes an error message that contains the key: it must be scrubbed
    srv = replay([{"kind": "error", "status": 401, "message": f"bad key {FAKE_KEY}"},
                  {"kind": "overloaded", "repeat": -1}])
    c = LLMClient(config_for(srv, max_retries=1), sleep=lambda s: None)
    r1 = c.send(REQ, seed="a")
    r2 = c.send(REQ, seed="b")
    assert not r1.ok and not r2.ok
    for text in (r1.reason, r2.reason, repr(c), caplog.text):
        assert FAKE_KEY not in text
    assert "[redacted]" in r1.reason


def test_failures_that_say_the_setup_cannot_work(replay):
    """A closed port, a refused key, an unknown model: each call fails at once (a closed
    port after its retries) with a reason naming the model and the server, marked as the
    setup's fault; an overloaded server is not."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    sleeps = []
    dead = LLMClient(LLMConfig(base_url=f"http://127.0.0.1:{port}", max_retries=2),
                     api_key=FAKE_KEY, sleep=sleeps.append).send(REQ, seed="s")
    assert dead.failure == "connect" and dead.unusable and len(sleeps) == 2
    assert dead.reason.startswith("retries exhausted after 3 attempts: cannot connect (")
    assert dead.reason.endswith(f"(claude-sonnet-4-6 at http://127.0.0.1:{port})")
    for status, kind in ((401, "auth"), (403, "auth"), (404, "not_found"), (400, "refused"),
                         (529, ""), (500, "")):
        srv = replay([{"kind": "error", "status": status, "repeat": -1}])
        r = client(srv, [], max_retries=1).send(REQ, seed="s")
        assert not r.ok and r.failure == kind and r.unusable == bool(kind), (status, r)
        assert (srv.base_url in r.reason) == bool(kind)
