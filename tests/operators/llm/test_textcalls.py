"""Tool calls written as JSON in an answer's text: the formats local servers emit, the
limits on hostile text, and whole conversations on both protocols of the replay server."""
from __future__ import annotations

import json
import time

import pytest

from asmevo.operator import Rejected
from asmevo.operators.llm.agent_prompts import TOOLS
from asmevo.operators.llm.answer import Answer
from asmevo.operators.llm.prompts import TOOL
from asmevo.operators.llm.spend import MemoryLedger
from asmevo.operators.llm.textcalls import MAX_SPANS, spans, text_calls, with_text_calls
from tests.operators.llm.conftest import GOOD, K0, make_context, protocol
from tests.operators.llm.test_agent import Engine, equal

AGENT = {t["name"]: t["input_schema"] for t in TOOLS}
SINGLE = {TOOL["name"]: TOOL["input_schema"]}
TRY = {"start": 12, "end": 19, "replacement": GOOD}


def hermes(name: str, args: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


@pytest.mark.parametrize("text, want, how", [
    ("Let me look first.\n" + hermes("show", {"function": "asm_copy", "start": 8, "end": 22})
     + "\n" + hermes("analyze", {"start": 12, "end": 19}),
     [("show", {"function": "asm_copy", "start": 8, "end": 22}),
      ("analyze", {"start": 12, "end": 19})], "<tool_call> tags"),
    ("I'll try it:\n```json\n" + json.dumps({"name": "try_edit", "arguments": TRY}) + "\n```",
     [("try_edit", TRY)], "a fenced block"),
    ("```\n[" + json.dumps({"name": "analyze", "arguments": json.dumps({"start": 1, "end": 4})})
     + "]\n```", [("analyze", {"start": 1, "end": 4})], "a fenced block"),
    # Mistral's list, OpenAI's function shape, "parameters", prose with brackets and quotes
    ('Window [12, 19) is "hot". [TOOL_CALLS] [{"function": {"name": "submit", "arguments": '
     '{"rationale": "done"}}}, {"name": "profile", "parameters": {}}]',
     [("submit", {"rationale": "done"}), ("profile", {})], "JSON in the text"),
    ('{"name": "format_disk", "arguments": {}} {"tool": "next_window", "input": {}}',
     [("next_window", {})], "JSON in the text"),
])
def test_formats_local_servers_emit(text, want, how):
    assert text_calls(text, AGENT) == (want, how)


def test_the_arguments_alone_are_a_call_of_the_one_tool_offered():
    text = 'Here is my edit: {"replacement": ["s_nop 0"], "rationale": "r"} as asked.'
    assert text_calls(text, SINGLE) == ([("propose_edit", {"replacement": ["s_nop 0"],
                                                           "rationale": "r"})], "JSON in the text")
    # with several tools offered, a nameless object is nobody's call; nor one with extra keys
    assert text_calls(text, AGENT) == ([], "")
    assert text_calls('{"replacement": [], "rationale": "r", "x": 1}', SINGLE) == ([], "")


def test_hostile_text_is_bounded():
    deep = "[" * 100 + "]" * 100              # past ASMEVO_MAX_JSON_DEPTH: never parsed
    assert text_calls(deep + hermes("profile", {}), AGENT)[0] == [("profile", {})]
    late = "{x} " * (MAX_SPANS + 5) + json.dumps({"name": "profile", "arguments": {}})
    assert len(spans(late)) == MAX_SPANS and text_calls(late, AGENT) == ([], "")
    t0 = time.perf_counter()
    for text in ('{' + '"\\' * 100_000, '{' * 64 + '"' + 'x' * 1_000_000, "[" * 200_000,
                 "<tool_call>" * 50_000, "```json\n" * 50_000):
        assert text_calls(text, AGENT) == ([], "")
    assert time.perf_counter() - t0 < 3.0     # one scan, never a parse at every brace


def test_an_answer_with_its_own_tool_calls_is_left_alone():
    from asmevo.operators.llm.answer import ToolUse
    a = Answer("also " + hermes("profile", {}), (ToolUse("t1", "next_window", {}),))
    assert with_text_calls(a, {"tools": TOOLS}) == (a, "")
    plain = Answer(hermes("profile", {}))
    assert with_text_calls(plain, {"tools": []}) == (plain, "")



@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_conversation_in_text_tool_calls(replay, make_op, asm_copy_k0, provider):
    """A server without a tool parser: every answer is text. The calls are read from it,
    recorded as the answer's tool calls (so a resumed run rereads them), and the row says
    so."""
    srv = replay([{"kind": "text", "text": "Trying the saddr form.\n" + hermes("try_edit", TRY)},
                  {"kind": "text", "text": "```json\n" + json.dumps(
                      {"name": "submit", "arguments": {"rationale": "passed"}}) + "\n```"}])
    ledger = MemoryLedger()
    eng = Engine(equal(1.2))
    ctx = make_context(asm_copy_k0, ledger=ledger, try_edit=eng)
    edit = make_op("llm_agent", srv, **protocol(srv, provider)).mutate(K0, ctx)
    assert not isinstance(edit, Rejected) and list(edit.lines) == GOOD and len(eng.tried) == 1
    rows = sorted(ledger.rows.values(), key=lambda r: r["turn"])
    assert [json.loads(r["answer"])["tool_uses"][0]["name"] for r in rows] == ["try_edit",
                                                                                "submit"]
    assert "1 tool call(s) read from the answer's text (<tool_call> tags)" in rows[0]["reason"]
    assert "(a fenced block)" in rows[1]["reason"]
    assert "speedup over K0: 1.2000x" in srv.received[1].raw


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_single_call_answer_of_bare_arguments(replay, make_op, asm_copy_k0, provider):
    srv = replay([{"kind": "text", "text": "Proposed:\n" + json.dumps(
        {"replacement": GOOD, "rationale": "saddr addressing"})}])
    e = make_op("llm_mutate", srv, **protocol(srv, provider)).mutate(
        K0, make_context(asm_copy_k0))
    assert not isinstance(e, Rejected) and list(e.lines) == GOOD


def test_off_when_the_config_says_so(replay, make_op, asm_copy_k0):
    srv = replay([{"kind": "text", "text": hermes("submit", {"rationale": "x"})}])
    ctx = make_context(asm_copy_k0)
    out = make_op("llm_agent", srv, text_tool_calls=False).mutate(K0, ctx)
    assert isinstance(out, Rejected) and "an answer without a tool call" in ctx.reasons[0]


def test_a_call_in_a_huge_text_is_kept_within_the_stored_cap(replay, make_op, asm_copy_k0,
                                                             monkeypatch):
    """Read before the cap, cut by it: the text goes, the call stays, both are recorded."""
    monkeypatch.setenv("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", str(64 << 10))
    srv = replay([{"kind": "text", "text": "x" * 200_000 + hermes("try_edit", TRY)},
                  {"kind": "text", "text": hermes("submit", {"rationale": "ok"})}])
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger, try_edit=Engine(equal(1.2)))
    edit = make_op("llm_agent", srv).mutate(K0, ctx)
    assert list(edit.lines) == GOOD
    first = min(ledger.rows.values(), key=lambda r: r["turn"])
    assert "read from the answer's text" in first["reason"] and "cut: text" in first["reason"]
    assert len(first["answer"]) < 64 << 10
