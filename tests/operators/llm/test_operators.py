"""The three operators against the replay server, on a real corpus kernel (asm_copy)."""
from __future__ import annotations

import hashlib
import json
import logging

import pytest

from asmevo.edits import Edit
from asmevo.targets.amdgpu import sanitize
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.pricing import Price, Usage, cost
from asmevo.operators.llm.spend import MemoryLedger, render_report, spend_report
from asmevo.operator import Attempt, OperatorUnusable, Rejected, get_operator
from tests.operators.llm.conftest import (FAKE_KEY, GOOD, K0, LOOP_BODY, make_context,
                                          tool_answer)

USAGE = {"input_tokens": 1200, "output_tokens": 150, "cache_creation_input_tokens": 2500,
         "cache_read_input_tokens": 0}


def test_mutate_proposes_an_edit_and_records_its_cost(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD, "address through saddr", usage=USAGE,
                              text="Let me think... here it is.")])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger)
    e = op.mutate(K0, ctx)
    assert e == Edit("asm_copy", 12, 19, tuple(GOOD), "llm_mutate", e.note)
    assert e.note.startswith("address through saddr [llm call ")
    (row,) = ledger.rows.values()
    assert row["operator"] == "llm_mutate" and row["status"] == "proposed"
    assert (row["tokens_in"], row["tokens_out"], row["cache_write_tokens"],
            row["cache_read_tokens"]) == (1200, 150, 2500, 0)
    assert row["cost"] == pytest.approx(cost(Usage(1200, 150, 2500, 0), Price(3, 15, 3.75, 0.3)))
    assert row["call_id"][:12] in e.note
    # the stored prompt is exactly the request that was sent, under its sha256
    text = ledger.prompts[row["prompt_sha256"]]
    assert hashlib.sha256(text.encode()).hexdigest() == row["prompt_sha256"]
    assert json.loads(text) == srv.received[0].body
    # the edit is a real, applicable edit of the program
    assert apply_edits(asm_copy_k0, [e]).function("asm_copy").instructions[13].text == GOOD[1]


def test_retries_then_success_through_the_operator(replay, make_op, asm_copy_k0, sleeps):
    srv = replay([{"kind": "error", "status": 429, "retry_after": "0"}, {"kind": "overloaded"},
                  {"kind": "error", "status": 503}, tool_answer(GOOD)])
    e = make_op("llm_mutate", srv).mutate(K0, make_context(asm_copy_k0))
    assert not isinstance(e, Rejected) and len(srv.received) == 4 and len(sleeps) == 3


def test_retries_exhausted_is_an_operator_failure(replay, make_op, asm_copy_k0):
    srv = replay([{"kind": "overloaded", "repeat": -1}])
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger)
    assert isinstance(make_op("llm_mutate", srv, max_retries=2).mutate(K0, ctx), Rejected)
    assert len(srv.received) == 3
    assert ctx.reasons and "retries exhausted after 3 attempts" in ctx.reasons[0]
    assert ledger.rows == {}            # no answer, no tokens billed


def test_hostile_answer_rejected_before_any_tool(replay, make_op, asm_copy_k0, monkeypatch):
    calls = []
    monkeypatch.setattr(sanitize, "encode_lines", lambda *a, **k: calls.append(a))
    srv = replay([tool_answer(["v_lshlrev_b32_e32 v2, 2, v1", '.incbin "/etc/passwd"'],
                              usage=USAGE)])
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger)
    assert isinstance(make_op("llm_mutate", srv).mutate(K0, ctx), Rejected)
    assert calls == []                   # llvm-mc never saw it
    assert "answer rejected" in ctx.reasons[0] and ".incbin" in ctx.reasons[0]
    (row,) = ledger.rows.values()        # the tokens were spent all the same
    assert row["status"] == "rejected" and row["cost"] > 0 and ".incbin" in row["reason"]


def test_label_and_non_assembling_answers_rejected(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(["loop:", "s_endpgm"]),
                  tool_answer(["v_lshl_add_u64 v[4:6], s[4:5], 0, v[2:3]"])])
    op = make_op("llm_mutate", srv)
    c1, c2 = make_context(asm_copy_k0, slot=1), make_context(asm_copy_k0, slot=2)
    assert isinstance(op.mutate(K0, c1), Rejected) and isinstance(op.mutate(K0, c2), Rejected)
    assert "label definitions are not allowed" in c1.reasons[0]
    assert "does not assemble" in c2.reasons[0] and "invalid operand" in c2.reasons[0]


def test_text_only_answer_is_a_recorded_failure(replay, make_op, asm_copy_k0):
    srv = replay([{"kind": "text", "text": "You could remove the v_mov."}])
    ledger = MemoryLedger()
    ctx = make_context(asm_copy_k0, ledger=ledger)
    assert isinstance(make_op("llm_mutate", srv).mutate(K0, ctx), Rejected)
    assert "no usable tool call" in ctx.reasons[0]
    assert next(iter(ledger.rows.values()))["status"] == "no_tool"


def test_unchanged_window_is_not_an_edit(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(LOOP_BODY, "nothing to gain")])
    ctx = make_context(asm_copy_k0)
    assert isinstance(make_op("llm_mutate", srv).mutate(K0, ctx), Rejected)
    assert "no change" in ctx.reasons[0]


def test_budget_spent_stops_calls(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD, usage=USAGE, repeat=-1)])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger(limit=0.001)
    assert not isinstance(op.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=1)),
                          Rejected)
    ctx = make_context(asm_copy_k0, ledger=ledger, slot=2)
    assert isinstance(op.mutate(K0, ctx), Rejected)
    assert ctx.reasons == ["llm_mutate: LLM budget spent"]
    assert len(srv.received) == 1


def test_resume_reuses_a_recorded_call_without_sending_or_charging(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD, usage=USAGE)])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger()
    first = op.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=3))
    spent = ledger.spent()
    # the run is killed before the generation commits; on resume the same call comes again
    op2 = make_op("llm_mutate", srv)
    again = op2.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=3))
    assert again == first and again.note == first.note
    assert len(srv.received) == 1 and ledger.spent() == spent and len(ledger.rows) == 1


def test_call_ids_are_deterministic_and_distinct(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD, repeat=-1)])
    op = make_op("llm_mutate", srv)
    ledger = MemoryLedger()
    for slot in (0, 1, 0):
        op.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=slot))
    assert len(ledger.rows) == 2 and len(srv.received) == 2


def test_verdict_of_the_last_attempt_reaches_the_next_prompt(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD)])
    wrong = Edit("asm_copy", 12, 19, ("v_lshlrev_b32_e32 v2, 2, v0",) + tuple(GOOD[1:]),
                 "llm_mutate")
    nb = [Attempt(1, "llm_mutate", str(wrong), wrong, "mismatch",
                  "output dst[64]: expected 1611283385, got -1515870811", None, None)]
    make_op("llm_mutate", srv).mutate(K0, make_context(asm_copy_k0, notebook=nb))
    assert "mismatch: output dst[64]: expected 1611283385" in srv.received[0].raw


def test_repair_quotes_the_verdict_and_returns_the_fix(replay, make_op, asm_copy_k0):
    srv = replay([{"kind": "tool_use", "match": {"contains": ["Task: repair", "status: mismatch"]},
                   "input": {"replacement": GOOD, "rationale": "index is v1, not the lane id"}}])
    bad_lines = ("v_lshlrev_b32_e32 v2, 2, v0",) + tuple(GOOD[1:])
    wrong = Edit("asm_copy", 12, 19, bad_lines, "llm_mutate")
    nb = [Attempt(1, "llm_mutate", str(wrong), wrong, "mismatch", "output dst[64] differs",
                  None, None)]
    ctx = make_context(asm_copy_k0, notebook=nb)
    e = make_op("llm_repair", srv).mutate(K0, ctx)
    assert e == Edit("asm_copy", 12, 19, tuple(GOOD), "llm_repair", e.note)
    u = srv.received[0].body["messages"][0]["content"][0]["text"]
    assert "v_lshlrev_b32_e32 v2, 2, v0" in u and "output dst[64] differs" in u


def test_repair_of_a_rejected_individual_replaces_its_own_lines(replay, make_op, asm_copy_k0):
    from asmevo.engine.individual import Individual
    srv = replay([tool_answer(GOOD, "fix index")])
    bad = Edit("asm_copy", 12, 19, ("v_lshlrev_b32_e32 v2, 2, v0",) + tuple(GOOD[1:]), "llm_mutate")
    ind = Individual("x1", (bad,), status="mismatch")
    ctx = make_context(asm_copy_k0, program_of=lambda i: apply_edits(asm_copy_k0, i.edits))
    e = make_op("llm_repair", srv).mutate(ind, ctx)
    assert (e.start, e.end) == (12, 16)     # the 4 lines the bad edit put there
    fixed = apply_edits(asm_copy_k0, (bad, e)).function("asm_copy")
    assert [i.text for i in fixed.instructions[12:16]] == GOOD
    # the prompt shows the original window, not the bad lines, as the code to replace
    assert "v_mov_b32_e32 v3, 0" in srv.received[0].raw


def test_repair_without_a_rejected_attempt_sends_nothing(replay, make_op, asm_copy_k0):
    srv = replay([])
    ctx = make_context(asm_copy_k0)
    assert isinstance(make_op("llm_repair", srv).mutate(K0, ctx), Rejected)
    assert srv.received == [] and "no rejected attempt" in ctx.reasons[0]


def test_missing_key_is_a_clear_error(replay, monkeypatch, asm_copy_k0):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    srv = replay([])
    op = get_operator("llm_mutate", base_url=srv.base_url)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        op.mutate(K0, make_context(asm_copy_k0))


def test_key_never_leaks_into_prompts_rows_reasons_or_logs(replay, fake_key, asm_copy_k0, caplog):
    caplog.set_level(logging.DEBUG)
    srv = replay([tool_answer(GOOD), {"kind": "error", "status": 401, "message": FAKE_KEY},
                  tool_answer(['.incbin "/etc/passwd"'])])
    op = get_operator("llm_mutate", base_url=srv.base_url, backoff_base_s=0.0)  # key from env
    ledger = MemoryLedger()
    ctxs = [make_context(asm_copy_k0, ledger=ledger, slot=s) for s in range(3)]
    results = []
    for c in ctxs:
        try:
            results.append(op.mutate(K0, c))
        except OperatorUnusable as exc:       # the 401: the setup's fault, said in one line
            results.append(exc)
    assert not isinstance(results[0], Rejected) and isinstance(results[1], OperatorUnusable)
    assert isinstance(results[2], Rejected) and "[redacted]" in str(results[1])
    everything = json.dumps([ledger.prompts, ledger.rows, [c.reasons for c in ctxs],
                             [str(r) for r in results], repr(op.client)], default=str)
    assert FAKE_KEY not in everything and FAKE_KEY not in caplog.text
    assert all(FAKE_KEY not in r.raw for r in srv.received)
    assert all(r.had_api_key for r in srv.received)


def test_spend_report_per_operator_and_per_improvement(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD, usage=USAGE, repeat=-1)])
    ledger = MemoryLedger()
    ids = []
    for name, slot in (("llm_mutate", 0), ("llm_mutate", 1)):
        make_op(name, srv).mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=slot))
    ids = list(ledger.rows)
    rep = spend_report(ledger.rows.values(), improved_call_ids=ids[:1])
    one = cost(Usage(1200, 150, 2500, 0), Price(3, 15, 3.75, 0.3))
    assert rep["total"].calls == 2 and rep["total"].cost == pytest.approx(2 * one)
    assert rep["llm_mutate"].cost_per_improvement == pytest.approx(2 * one)
    assert "llm_mutate" in render_report(rep)


def test_waits_are_recomputed_after_sanitizing(replay, make_op, asm_copy_k0):
    pytest.importorskip("asmevo.targets.amdgpu.analysis.waitcnt")
    no_wait = [GOOD[0], GOOD[1], GOOD[3]]          # the model forgot the wait before the store
    srv = replay([tool_answer(no_wait, "drop the wait")])
    e = make_op("llm_mutate", srv).mutate(K0, make_context(asm_copy_k0))
    assert list(e.lines) == GOOD and e.note.endswith("(waits recomputed)")


def test_the_window_is_drawn_by_its_share_of_the_modeled_time(asm_copy_k0):
    """The profiled hot windows carry their share of the time, and a proposal's window is
    drawn in proportion to it (it was drawn uniformly from the top three): over 4,000
    seeded draws each window's count is within 4 standard deviations of its share, the
    fourth window (outside a top three) is drawn too, and a uniform choice is far off."""
    from math import sqrt

    from asmevo.operator import LineProfile
    from asmevo.operators.llm.operators import pick_window
    shares = {("asm_copy", 12, 19): 0.55, ("asm_copy", 0, 7): 0.25, ("asm_copy", 7, 12): 0.15,
              ("asm_copy", 19, 24): 0.05}
    profile = LineProfile("modeled", "cycles", {},
                          tuple((*w, s) for w, s in shares.items()))
    ctx = make_context(asm_copy_k0, window=None, profile_of=lambda ind: profile)
    ctx.windows_of = lambda ind: list(shares)
    op = get_operator("llm_mutate", llm={"api_key_env": "ANTHROPIC_API_KEY"})
    n = 4000
    counts = dict.fromkeys(shares, 0)
    for _ in range(n):
        counts[pick_window(op, ctx, asm_copy_k0, K0)] += 1
    for w, p in shares.items():
        assert abs(counts[w] - n * p) <= 4 * sqrt(n * p * (1 - p)), (w, counts)
    uniform = n / 3
    assert counts[("asm_copy", 12, 19)] > uniform + 15 * sqrt(uniform), counts
    # a window the profile gives no share (0, or none at all) is not drawn while others
    # have one; without any share, one of the first three, uniformly
    ctx.windows_of = lambda ind: [("asm_copy", 24, 26)] + list(shares)
    assert ("asm_copy", 24, 26) not in {pick_window(op, ctx, asm_copy_k0, K0)
                                        for _ in range(300)}
    ctx.profile_of = lambda ind: None
    drawn = [pick_window(op, ctx, asm_copy_k0, K0) for _ in range(600)]
    assert set(drawn) == {("asm_copy", 24, 26), ("asm_copy", 12, 19), ("asm_copy", 0, 7)}
    assert all(abs(drawn.count(w) - 200) < 4 * sqrt(600 * 2 / 9) for w in set(drawn))


def test_a_call_the_setup_cannot_answer_raises_unusable(replay, make_op, asm_copy_k0):
    """A refused key fails the proposal as the setup's fault (the engine stops a run whose
    operator fails a whole generation so); a busy server is an ordinary failure."""
    srv = replay([{"kind": "error", "status": 401, "message": "invalid x-api-key"}])
    with pytest.raises(OperatorUnusable, match=r"^llm_mutate: API call failed: HTTP 401: "
                       r"invalid x-api-key \(claude-sonnet-4-6 at http://127\.0\.0\.1:\d+\)$"):
        make_op("llm_mutate", srv).mutate(K0, make_context(asm_copy_k0))
    srv = replay([{"kind": "overloaded", "repeat": -1}])
    assert isinstance(make_op("llm_mutate", srv, max_retries=1).mutate(
        K0, make_context(asm_copy_k0)), Rejected)
