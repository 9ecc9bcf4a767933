"""A hostile LLM server, played by the local replay server: every limit of the client holds.

The modes (operators/llm/replay.py): a response dripped one byte at a time, status
line and headers included; tool arguments nested 100,000 deep (and 500 deep,
which Python's parser would take); usage counts that are negative, huge or not
numbers; answers past the size limits; a gzip bomb. Each ends as a failed Reply
or a refused answer with its reason, within the stated time, with the budget
charged at least what was asked for: never a traceback, never a wait past a
limit, never negative spend. Both protocols (Anthropic Messages, OpenAI chat
completions) go through the same limits. No key and no network: 127.0.0.1 only.
"""
from __future__ import annotations

import json
import time

import pytest

from asmevo import knobs
from asmevo.operator import Rejected
from asmevo.operators.llm.answer import Answer, ToolUse, capped
from asmevo.operators.llm.client import LLMClient
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.operators import BUDGET_SPENT
from asmevo.operators.llm.pricing import Price
from asmevo.operators.llm.spend import MemoryLedger
from tests.operators.llm.conftest import FAKE_KEY, GOOD, K0, config_for, make_context, tool_answer

REQ = {"model": "claude-haiku-4-5", "max_tokens": 100,
       "messages": [{"role": "user", "content": "hi"}]}
PROVIDERS = ("anthropic", "openai")
DEEP = "[" * 100_000 + "]" * 100_000
LIMIT = knobs.LLM_MAX_USAGE_TOKENS.default


def config(srv, provider: str, **kw) -> LLMConfig:
    if provider == "openai":
        kw = dict(provider="openai", model="local-coder", base_url=srv.base_url + "/v1",
                  prices={"local-coder": Price(3.0, 15.0, 3.75, 0.3)}, **kw)
    return config_for(srv, **kw)


def send(srv, provider: str, deadline: float | None = None, **kw):
    client = LLMClient(config(srv, provider, **kw), api_key=FAKE_KEY, sleep=lambda s: None)
    t0 = time.monotonic()
    reply = client.send(REQ, seed="hostile", deadline=deadline)
    return reply, time.monotonic() - t0


# -- drip --------------------------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dripped_answer_ends_at_the_calls_total_deadline(replay, provider):
    """One byte every 20 ms never trips a read timeout; each attempt still ends at its
    timeout_s, and the call at call_timeout_s, retries and all."""
    srv = replay([tool_answer(GOOD, drip_s=0.02, repeat=-1)])
    reply, seconds = send(srv, provider, timeout_s=0.4, call_timeout_s=1.0, max_retries=9)
    assert not reply.ok and seconds < 1.0 + 0.3, seconds
    assert reply.http_attempts == len(srv.received) == 3
    assert "call_timeout_s (1 s) passed before the answer was complete" in reply.reason


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dripped_answer_ends_at_the_runs_deadline_without_a_retry(replay, provider):
    srv = replay([tool_answer(GOOD, drip_s=0.02, repeat=-1)])
    reply, seconds = send(srv, provider, deadline=time.monotonic() + 0.6, timeout_s=30.0,
                          call_timeout_s=60.0)
    assert not reply.ok and seconds < 0.6 + 0.3, seconds
    assert reply.http_attempts == 1
    assert reply.reason == ("API call failed: the run's budget.wall_seconds passed before "
                            "the answer was complete")


def test_a_run_deadline_already_past_sends_nothing(replay):
    srv = replay([tool_answer(GOOD)])
    reply, _ = send(srv, "anthropic", deadline=time.monotonic() - 1)
    assert not reply.ok and srv.received == [] and "budget.wall_seconds is spent" in reply.reason


# -- deep JSON ---------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [DEEP, "[" * 500 + "]" * 500], ids=["100000", "500"])
def test_deep_tool_arguments_are_refused_before_they_are_parsed(replay, make_op, asm_copy_k0,
                                                                raw):
    """OpenAI: the arguments are a JSON string the client parses, nesting measured first."""
    srv = replay([{"kind": "tool_use", "raw": raw}])
    reply, _ = send(srv, "openai")
    assert reply.ok
    (use,) = reply.answer.tool_uses
    depth = raw.count("[")
    assert use.input == (f"refused: tool arguments nesting: {depth:,} levels of nesting is "
                         "over the limit of 64 (set ASMEVO_MAX_JSON_DEPTH to raise it)")


def test_deep_tool_arguments_through_the_operator_are_a_recorded_refusal(replay, asm_copy_k0,
                                                                          fake_key):
    from asmevo.operator import get_operator
    srv = replay([{"kind": "tool_use", "raw": DEEP}])
    cfg = config(srv, "openai")
    op = get_operator("llm_mutate", llm=cfg, client=LLMClient(cfg, api_key=FAKE_KEY))
    ledger = MemoryLedger()
    out = op.mutate(K0, make_context(asm_copy_k0, ledger=ledger))
    assert isinstance(out, Rejected) and "ASMEVO_MAX_JSON_DEPTH" in out.reason
    (row,) = ledger.rows.values()
    assert row["status"] == "no_tool" and row["answer"] is None and row["cost"] > 0


@pytest.mark.parametrize("raw", [DEEP, "[" * 500 + "]" * 500], ids=["100000", "500"])
def test_a_deep_answer_body_is_refused_before_the_sdk_parses_it(replay, raw):
    """Anthropic: the input is part of the body, measured before the SDK sees it."""
    srv = replay([{"kind": "tool_use", "raw": raw, "repeat": -1}])
    reply, _ = send(srv, "anthropic")
    assert not reply.ok and reply.http_attempts == 1
    assert "levels of nesting is over the limit of 64 (set ASMEVO_MAX_JSON_DEPTH" in reply.reason


# -- usage -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-1_000_000_000, -1, "lots", 1.5, 10 ** 30, True, None],
                         ids=["negative", "minus-one", "text", "fraction", "huge", "bool",
                              "null"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bad_usage_count_is_charged_at_the_limit_and_named(replay, provider, bad):
    field = "output_tokens" if provider == "anthropic" else "completion_tokens"
    srv = replay([tool_answer(GOOD, wire_usage={field: bad})])
    reply, _ = send(srv, provider)
    assert reply.ok
    if bad is None:                            # absent: nothing was used
        assert reply.usage.output_tokens == 0 and reply.notes == ()
        return
    assert reply.usage.output_tokens == LIMIT
    (note,) = reply.notes
    assert note.startswith(f"usage {field} = ") and note.endswith(
        f"is not a token count in [0, {LIMIT:,}]: charged as {LIMIT:,} "
        "(ASMEVO_LLM_MAX_USAGE_TOKENS)")


def test_negative_usage_cannot_refill_the_budget(replay, make_op, asm_copy_k0):
    """The attack of the issue: -$2999.91 recorded, a $0.01 budget made 21 calls. Now the
    first call is charged at the limit, and nothing more is sent."""
    srv = replay([tool_answer(GOOD, repeat=-1, wire_usage={
        "input_tokens": -10 ** 9, "output_tokens": -10 ** 9})])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger(limit=0.01)
    reasons = []
    for slot in range(5):
        ctx = make_context(asm_copy_k0, ledger=ledger, slot=slot)
        op.mutate(K0, ctx)
        reasons += ctx.reasons
    assert len(srv.received) == 1 and len(ledger.rows) == 1
    (row,) = ledger.rows.values()
    assert row["cost"] == pytest.approx(LIMIT * (3.0 + 15.0) / 1e6)
    assert row["status"] == "proposed" and "usage input_tokens = -1000000000" in row["reason"]
    assert ledger.remaining() == 0 and reasons == [f"llm_mutate: {BUDGET_SPENT}"] * 4


# -- size --------------------------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_answer_past_the_byte_limit_is_cut_off_and_not_retried(replay, provider,
                                                                  monkeypatch):
    monkeypatch.setenv("ASMEVO_LLM_MAX_ANSWER_BYTES", "65536")
    srv = replay([{"kind": "text", "text": "x" * 200_000, "repeat": -1}])
    reply, _ = send(srv, provider)
    assert not reply.ok and reply.http_attempts == 1
    assert reply.reason.startswith("API call failed: the answer: ")
    assert reply.reason.endswith("bytes received for one LLM answer is over the limit of "
                                 "65,536 (set ASMEVO_LLM_MAX_ANSWER_BYTES to raise it)")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_compressed_answer_is_refused_before_it_is_inflated(replay, provider):
    srv = replay([{"kind": "text", "text": "0" * 5_000_000, "gzip": True}])
    reply, _ = send(srv, provider)
    assert not reply.ok and reply.http_attempts == 1
    assert reply.reason == "API call failed: the answer is compressed (gzip), which was not " \
                           "asked for"


def test_an_answer_past_the_stored_cap_is_kept_cut_and_says_so(replay, make_op, asm_copy_k0,
                                                                monkeypatch):
    """What is used is what is stored: a resumed run rereads the same (cut) answer."""
    monkeypatch.setenv("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", "4096")
    srv = replay([tool_answer(GOOD, text="y" * 100_000)])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger()
    edit = op.mutate(K0, make_context(asm_copy_k0, ledger=ledger))
    assert not isinstance(edit, Rejected) and list(edit.lines) == GOOD
    (row,) = ledger.rows.values()
    assert row["status"] == "proposed" and len(row["answer"]) < 4096
    assert "answer of 100," in row["reason"] and "(ASMEVO_LLM_MAX_STORED_ANSWER_BYTES = " \
        "4,096; cut: text)" in row["reason"]
    again = op.mutate(K0, make_context(asm_copy_k0, ledger=ledger))     # resumed: reused
    assert again == edit and len(srv.received) == 1


def test_a_tool_input_past_the_stored_cap_is_refused_not_stored(replay, make_op, asm_copy_k0,
                                                                 monkeypatch):
    monkeypatch.setenv("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", "4096")
    srv = replay([tool_answer(GOOD, rationale="z" * 50_000)])
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger)
    assert isinstance(make_op("llm_mutate", srv).mutate(K0, ctx), Rejected)
    (row,) = ledger.rows.values()
    assert row["status"] == "no_tool" and row["answer"] is None
    assert "cut: input of 'propose_edit'" in row["reason"]


def test_capped_answers_are_within_the_cap_and_read_back_unchanged():
    uses = tuple(ToolUse(f"id{k}" * 100, "show", {"lines": ["v" * 3000] * k}) for k in range(40))
    big = Answer("t" * 300_000, uses, "tool_use" * 100)
    kept, note = capped(big, 16_384)
    assert len(json.dumps(kept.to_json(), separators=(",", ":"))) <= 16_384
    assert note.startswith(f"answer of {len(json.dumps(big.to_json(), separators=(',', ':'))):,}")
    assert Answer.from_json(json.loads(json.dumps(kept.to_json()))) == kept
    assert all(len(t.id) <= 200 for t in kept.tool_uses) and len(kept.stop) <= 200
    small = Answer("ok", (ToolUse("a", "show", {"x": 1}),), "tool_use")
    assert capped(small, 16_384) == (small, "")


# -- the agent -----------------------------------------------------------------------------

def test_an_agent_turn_past_the_stored_cap_is_used_as_stored(replay, make_op, asm_copy_k0,
                                                             monkeypatch):
    """The next turn's transcript carries the cut answer: what the archive keeps is what the
    conversation went on with, so a resumed conversation is the same conversation."""
    from tests.operators.llm.test_agent import call, submit, turn
    monkeypatch.setenv("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", "4096")
    small = {"input_tokens": 100, "output_tokens": 100}
    srv = replay([turn(call("analyze", start=12, end=19), text="t" * 100_000, usage=small),
                  turn(submit(GOOD))])
    ledger = MemoryLedger()
    edit = make_op("llm_agent", srv).mutate(K0, make_context(asm_copy_k0, ledger=ledger))
    assert list(edit.lines) == GOOD and len(srv.received) == 2
    first = min(ledger.rows.values(), key=lambda r: r["turn"])
    stored = Answer.from_json(json.loads(first["answer"]))
    assert len(first["answer"]) <= 4096 and "cut: text" in first["reason"]
    sent = srv.received[1].body["messages"][-2]                 # the assistant turn, replayed
    assert sent["content"][0]["text"] == stored.text and stored.text.endswith(
        "[cut: 100,000 characters]")


def test_a_run_deadline_ends_an_agent_conversation(replay, make_op, asm_copy_k0):
    from tests.operators.llm.test_agent import call, turn
    srv = replay([turn(call("analyze", start=12, end=19)),
                  turn(call("analyze", start=12, end=19), drip_s=0.05, repeat=-1)])
    ctx = make_context(asm_copy_k0, deadline=time.monotonic() + 1.0)
    t0 = time.monotonic()
    out = make_op("llm_agent", srv).mutate(K0, ctx)
    assert isinstance(out, Rejected) and time.monotonic() - t0 < 1.0 + 0.5
    assert "the run's budget.wall_seconds passed before the answer was complete" in \
        ctx.reasons[0]
