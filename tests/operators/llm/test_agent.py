"""The ``llm_agent`` conversation on its own: tools, bounds, choices, resume.

The model is the replay server; the engine's ``try_edit`` callback is a stand-in
that records what it was asked and answers with a scripted verdict (the real
engine path is ``test_agent_e2e``)."""
from __future__ import annotations

import json

from asmevo.targets.amdgpu import sanitize
from asmevo.operators.llm.spend import MemoryLedger
from asmevo.operator import Rejected, TryResult
from tests.operators.llm.conftest import GOOD, K0, make_context

USAGE = {"input_tokens": 1000, "output_tokens": 100, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}           # $0.0045 a turn at claude-sonnet-4-6's prices
WRONG = ["v_lshlrev_b32_e32 v2, 2, v0"] + GOOD[1:]
SLOWER = GOOD + ["s_nop 0"]


def call(tool, **inp) -> dict:
    return {"tool": tool, "input": inp}


def turn(*calls, **extra) -> dict:
    return {"kind": "tool_use", "calls": list(calls), **extra}


def try_(lines, start=12, end=19):
    return call("try_edit", start=start, end=end, replacement=list(lines))


def submit(lines, start=12, end=19):
    return call("submit", start=start, end=end, replacement=list(lines), rationale="why")


class Engine:
    """Records tried edits (the new one of each try, and the whole chain it sat on);
    answers each with the next scripted verdict."""

    def __init__(self, *verdicts: TryResult):
        self.verdicts = list(verdicts)
        self.tried = []
        self.chains = []

    def __call__(self, edits):
        self.chains.append(tuple(edits))
        self.tried.append(edits[-1])
        return self.verdicts[len(self.tried) - 1]


def equal(speedup: float) -> TryResult:
    return TryResult("equal", "bit-equal on 5 input sets", {}, speedup, "modeled", "k", True)


MISMATCH = TryResult("mismatch", "output dst[64]: expected 1, got 2",
                     {"buffer": "dst", "index": 64, "expected": "1", "got": "2"}, eval_key="m")


def run(make_op, srv, k0, engine=None, ledger=None, **cfg):
    op = make_op("llm_agent", srv, **cfg)
    ctx = make_context(k0, ledger=ledger, try_edit=engine or Engine())
    return op.mutate(K0, ctx), ctx


def tool_results(raw_body: dict) -> list[str]:
    return [b["content"] for b in raw_body["messages"][-1]["content"]
            if b.get("type") == "tool_result"]


def test_rejected_try_then_passing_try_then_submit(replay, make_op, asm_copy_k0):
    srv = replay([turn(call("show", function="asm_copy", start=10, end=20),
                       call("analyze", start=12, end=19)),
                  turn(try_(WRONG)), turn(try_(GOOD)), turn(submit(GOOD))])
    eng = Engine(MISMATCH, equal(1.25))
    edit, ctx = run(make_op, srv, asm_copy_k0, eng)
    assert not isinstance(edit, Rejected) and list(edit.lines) == GOOD and edit.operator == "llm_agent"
    assert [list(e.lines) for e in eng.tried] == [WRONG, GOOD]
    shown, analyzed = tool_results(srv.received[1].body)
    assert "   12  v_lshlrev_b32_e32 v2, 2, v1" in shown and "label_0070:" in shown
    assert "live in:" in analyzed and "VGPRs free in the window (inside the allocation): " \
        "v[9:15]" in analyzed and "vmcnt: 1 outstanding" in analyzed
    (mismatch,) = tool_results(srv.received[2].body)
    assert "verdict: mismatch: output dst[64]" in mismatch and '"index": 64' in mismatch
    (passed,) = tool_results(srv.received[3].body)
    assert "verdict: equal" in passed and "speedup over K0: 1.2500x (modeled)" in passed
    assert "[3 of 8 turns used; 5 turns and 2 tries left;" in \
        srv.received[3].body["messages"][-1]["content"][-1]["text"]


def test_the_accepted_edit_is_kept_when_the_turns_run_out(replay, make_op, asm_copy_k0):
    """GOOD is accepted; a later try on top of it passes but is slower: not stacked."""
    srv = replay([turn(try_(GOOD)), turn(try_(GOOD + ["s_nop 0"], 12, 16)),
                  turn(call("analyze", start=12, end=16))])
    eng = Engine(equal(1.3), equal(1.05))
    edit, ctx = run(make_op, srv, asm_copy_k0, eng, max_turns=3)
    assert list(edit.lines) == GOOD and (edit.start, edit.end) == (12, 19)
    assert eng.chains[1][0] == edit and list(eng.chains[1][1].lines) == GOOD + ["s_nop 0"]
    assert len(srv.received) == 3                        # the turn limit: no fourth call
    (slower,) = tool_results(srv.received[2].body)
    assert "not accepted: no faster than the best so far" in slower
    assert "This is your last turn" in srv.received[2].raw


def test_a_submit_that_failed_its_try_yields_nothing(replay, make_op, asm_copy_k0):
    srv = replay([turn(try_(WRONG)), turn(submit(WRONG))])
    edit, ctx = run(make_op, srv, asm_copy_k0, Engine(MISMATCH))
    assert isinstance(edit, Rejected) and "no tried edit passed" in ctx.reasons[0]
    assert "conversation ended (submitted) after 2 turns and 1 tries" in ctx.reasons[0]


def test_an_untried_submit_is_returned_for_the_engine_to_judge(replay, make_op, asm_copy_k0):
    srv = replay([turn(submit(GOOD))])
    eng = Engine()
    edit, _ = run(make_op, srv, asm_copy_k0, eng)
    assert list(edit.lines) == GOOD and eng.tried == []


def test_submitting_no_change_ends_the_conversation(replay, make_op, asm_copy_k0):
    srv = replay([turn(call("submit", start=12, end=12, replacement=[], rationale="none"))])
    edit, ctx = run(make_op, srv, asm_copy_k0)
    assert isinstance(edit, Rejected) and len(srv.received) == 1 and "(submitted)" in ctx.reasons[0]


def test_try_limit(replay, make_op, asm_copy_k0):
    srv = replay([turn(try_(WRONG)), turn(try_(GOOD)), turn(submit(GOOD))])
    eng = Engine(MISMATCH)
    edit, _ = run(make_op, srv, asm_copy_k0, eng, max_tries=1)
    assert len(eng.tried) == 1
    (refused,) = tool_results(srv.received[2].body)
    assert refused == "refused: no tries left (1 used); submit your best"
    assert list(edit.lines) == GOOD                      # untried: the engine judges it


def test_dollar_and_token_limits(replay, make_op, asm_copy_k0):
    forever = turn(call("analyze", start=12, end=19), usage=USAGE, repeat=-1)
    srv = replay([forever])
    # $0.0045 a turn: after 2 turns ($0.009) a third would pass $0.012
    _, ctx = run(make_op, srv, asm_copy_k0, max_conversation_dollars=0.012)
    assert len(srv.received) == 2 and "dollar limit" in ctx.reasons[0]
    srv2 = replay([forever])
    _, ctx2 = run(make_op, srv2, asm_copy_k0, max_conversation_tokens=2500)
    assert len(srv2.received) == 3 and "token limit (3300 of 2500)" in ctx2.reasons[0]


def test_the_run_budget_stops_a_conversation(replay, make_op, asm_copy_k0):
    srv = replay([turn(call("analyze", start=12, end=19), usage=USAGE, repeat=-1)])
    _, ctx = run(make_op, srv, asm_copy_k0, ledger=MemoryLedger(limit=0.008))
    assert len(srv.received) == 2 and "LLM budget spent" in ctx.reasons[0]


def test_hostile_and_malformed_calls_are_refused_before_any_tool(replay, make_op, asm_copy_k0,
                                                                 monkeypatch):
    encoded = []
    real = sanitize.encode_lines
    monkeypatch.setattr(sanitize, "encode_lines",
                        lambda lines, target, **kw: encoded.append(list(lines))
                        or real(lines, target, **kw))
    srv = replay([turn(try_(['.incbin "/etc/passwd"']), try_(["s_sethalt 1"]),
                       try_(GOOD, start=17, end=21), try_(GOOD, start=12, end=40),
                       call("show", function="../../etc", start=0, end=3),
                       call("format_disk")),
                  turn(call("try_edit", start=12, end=19, replacement=GOOD, extra=1),
                       call("analyze", start=-1, end=3), call("analyze", start=True, end=3)),
                  turn(call("submit", start=0, end=0, replacement=[], rationale="done"))])
    eng = Engine()
    edit, _ = run(make_op, srv, asm_copy_k0, eng)
    assert isinstance(edit, Rejected) and eng.tried == [] and encoded == []
    first = tool_results(srv.received[1].body)
    assert first[0].startswith("refused: ") and ".incbin" not in first[0][:9]
    assert "s_sethalt" in first[1] and "crosses label label_0070" in first[2]
    assert "outside instructions 0..25" in first[3] and "no function '../../etc'" in first[4]
    assert "unknown tool 'format_disk'" in first[5]
    second = tool_results(srv.received[2].body)
    assert "unexpected field 'extra'" in second[0]
    assert all("must be a non-negative integer" in r for r in second[1:])
    errors = [b.get("is_error") for b in srv.received[1].body["messages"][-1]["content"]
              if b.get("type") == "tool_result"]
    assert errors == [True] * 6


def test_too_many_calls_in_a_turn_are_ignored(replay, make_op, asm_copy_k0):
    srv = replay([turn(*[call("analyze", start=12, end=19)] * 3),
                  turn(call("submit", start=0, end=0, replacement=[], rationale="done"))])
    run(make_op, srv, asm_copy_k0, max_tool_calls=2)
    results = tool_results(srv.received[1].body)
    assert results[2] == "ignored: at most 2 tool calls a turn"


def test_an_answer_without_a_tool_call_ends_it(replay, make_op, asm_copy_k0):
    srv = replay([{"kind": "text", "text": "I think this is fine."}])
    edit, ctx = run(make_op, srv, asm_copy_k0)
    assert isinstance(edit, Rejected) and "an answer without a tool call" in ctx.reasons[0]


def test_a_resumed_conversation_sends_nothing_already_answered(replay, make_op, asm_copy_k0):
    script = [turn(try_(WRONG)), turn(try_(GOOD)), turn(submit(GOOD))]
    srv = replay(script)
    ledger = MemoryLedger()
    first, _ = run(make_op, srv, asm_copy_k0, Engine(MISMATCH, equal(1.25)), ledger=ledger)
    spent, calls = ledger.spent(), len(srv.received)
    # the run was killed before the generation committed; the same proposal again
    again, _ = run(make_op, srv, asm_copy_k0, Engine(MISMATCH, equal(1.25)), ledger=ledger)
    assert again == first and again.note == first.note
    assert len(srv.received) == calls == 3 and ledger.spent() == spent
    assert sorted(r["turn"] for r in ledger.rows.values()) == [0, 1, 2]
    answer = json.loads(next(iter(ledger.rows.values()))["answer"])
    assert answer["tool_uses"][0]["name"] == "try_edit"


def test_the_transcript_is_cached_turn_by_turn(replay, make_op, asm_copy_k0):
    srv = replay([turn(call("analyze", start=12, end=19)), turn(submit(GOOD))])
    run(make_op, srv, asm_copy_k0)
    first, second = (r.body for r in srv.received)
    assert first["system"] == second["system"] and first["tools"] == second["tools"]
    marks = [[b.get("cache_control") for m in body["messages"] for b in m["content"]]
             for body in (first, second)]
    # one breakpoint, on the newest block; the older ones carry none
    assert marks[0] == [{"type": "ephemeral"}]
    assert marks[1][-1] == {"type": "ephemeral"} and not any(marks[1][:-1])


def test_openai_protocol_and_a_malformed_argument_string(replay, make_op, asm_copy_k0):
    from asmevo.operators.llm.pricing import Price
    bad = {"kind": "message", "body": {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "", "type": "function",
                 "function": {"name": "try_edit", "arguments": "{not json"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}}
    srv = replay([bad, turn(try_(GOOD)), turn(submit(GOOD))])
    eng = Engine(equal(1.2))
    edit, _ = run(make_op, srv, asm_copy_k0, eng, provider="openai",
                  base_url=srv.base_url + "/v1", model="m", api_key_env="",
                  prices=(("m", Price(0.0, 0.0, 0.0, 0.0)),))
    assert list(edit.lines) == GOOD
    tool_msgs = [m for m in srv.received[1].body["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["tool_call_id"] == "call_0_0"     # the server sent no id
    assert tool_msgs[0]["content"] == "refused: the input of try_edit must be an object"


def test_a_line_that_does_not_assemble_is_refused_in_words_for_the_model(replay, make_op,
                                                                         asm_copy_k0):
    """llvm-mc's diagnostic reaches the model as the refusal, without the CLI's advice to
    run with --verbose (its caret and source lines are no use to the model either)."""
    srv = replay([turn(try_(["v_lshl_add_u64 v[4:6], s[4:5], 0, v[2:3]"])),
                  turn(call("submit", start=0, end=0, replacement=[], rationale="done"))])
    eng = Engine()
    run(make_op, srv, asm_copy_k0, eng)
    (refused,) = tool_results(srv.received[1].body)
    assert refused.startswith("refused: line 0 ('v_lshl_add_u64 v[4:6], s[4:5], 0, v[2:3]') "
                              "does not assemble for gfx942: invalid operand"), refused
    assert "--verbose" not in refused and "more lines" not in refused and eng.tried == []
