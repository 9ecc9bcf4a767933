"""Stacked, multi-window ``llm_agent`` conversations and novelty, on both protocols.

The model is the replay server (Anthropic Messages or OpenAI chat completions); the
engine's ``try_edit`` is the stand-in of ``test_agent`` (scripted verdicts, every chain
it was asked recorded), and the current best's profile a stand-in that ranks windows
of the stacked program (what the engine reads from each try's evaluation). The three
edits are real improvements of asm_copy (each verified equal and faster by
``asmevo candidate``: the loop body 7 -> 4 lines (1.0087x), then the ``s_nop 1`` after
the compare (1.0116x), then the wait before ``s_endpgm`` (1.0131x, modeled)).
"""
from __future__ import annotations

import pytest

from asmevo.operator import LineProfile, Rejected
from asmevo.targets.amdgpu.edits import apply_edits
from tests.operators.llm.conftest import GOOD, K0, make_context, protocol
from tests.operators.llm.test_agent import (MISMATCH, WRONG, Engine, call, equal, submit, try_,
                                            tool_results, turn)

PROTOCOLS = ["anthropic", "openai"]
# the current best's hot windows (start, end, share), by how many edits it has
WINDOWS = {0: [(12, 19, 0.82), (7, 12, 0.10), (19, 24, 0.05)],
           1: [(12, 16, 0.61), (7, 12, 0.20), (16, 21, 0.19)],
           2: [(11, 15, 0.62), (15, 20, 0.20), (7, 11, 0.18)],
           3: [(11, 15, 0.70), (7, 11, 0.20), (15, 19, 0.10)]}


def profile_of(ind) -> LineProfile:
    return LineProfile("modeled", "cycles", {}, tuple(
        ("asm_copy", s, e, share) for s, e, share in WINDOWS[len(ind.edits)]))


def agent(make_op, srv, provider: str, **cfg):
    return make_op("llm_agent", srv, **protocol(srv, provider), **cfg)


def converse(make_op, srv, provider, k0, engine, **ctx):
    ctx = make_context(k0, try_edit=engine, profile_of=profile_of, **ctx)
    return agent(make_op, srv, provider).mutate(K0, ctx), ctx


def results(body) -> list[str]:
    """The tool results a request carries last (either protocol's shape)."""
    msgs = body["messages"]
    if isinstance(msgs[-1]["content"], list):
        return tool_results(body)
    out: list[str] = []
    for m in reversed(msgs[:-1]):
        if m["role"] != "tool":
            break
        out.insert(0, m["content"])
    return out


def note(body) -> str:
    """The turn note after a turn's tool results (either protocol's shape)."""
    last = body["messages"][-1]
    return last["content"] if isinstance(last["content"], str) else last["content"][-1]["text"]


@pytest.mark.parametrize("provider", PROTOCOLS)
def test_a_stacked_conversation_of_three_accepted_edits(replay, make_op, asm_copy_k0, provider):
    srv = replay([turn(try_(GOOD)), turn(call("next_window")),
                  turn(try_([], 9, 10)), turn(call("next_window")),
                  turn(try_(["s_endpgm"], 20, 22)), turn(call("profile"), call("next_window")),
                  turn(call("submit", rationale="three windows"))])
    eng = Engine(equal(1.0087), equal(1.0116), equal(1.0131))
    edits, ctx = converse(make_op, srv, provider, asm_copy_k0, eng)
    assert isinstance(edits, tuple) and [(e.start, e.end, e.lines) for e in edits] == [
        (12, 19, tuple(GOOD)), (9, 10, ()), (20, 22, ("s_endpgm",))]
    # each try went on top of the accepted ones before it
    assert [len(c) for c in eng.chains] == [1, 2, 3] and eng.chains[2][:2] == edits[:2]
    final = [i.text for i in apply_edits(asm_copy_k0, edits).function("asm_copy").instructions]
    assert len(final) == 21 and "s_nop 1" not in final
    assert final[-2:] == ["s_cbranch_scc1 label_002C", "s_endpgm"]     # no wait before it
    r = [results(x.body) for x in srv.received]
    assert "accepted: edit 1 of this conversation's stack" in r[1][0] and "by -3" in r[1][0]
    assert "Window 2 (20.0% of the modeled time)" in r[2][0] and "[7, 12)" in r[2][0]
    assert "accepted: edit 2 of" in r[3][0] and "moved by -1" in r[3][0]
    # the next window is ranked in the stacked program: (15, 20) after two edits
    assert "Window 3 (20.0% of the modeled time)" in r[4][0] and "[15, 20)" in r[4][0]
    assert "accepted: edit 3 of" in r[5][0]
    profile, exhausted = r[6]
    assert "1.0131x of K0 (modeled), 3 accepted edit(s)" in profile
    assert "[11, 15)" in profile and "70.0%" in profile
    assert exhausted.startswith("refused: no hot window left")
    assert "3 accepted edit(s) stacked, 1.0131x of K0" in note(srv.received[6].body)
    assert len(srv.received) == 7 and srv.unused == []


@pytest.mark.parametrize("provider", PROTOCOLS)
def test_a_duplicate_is_never_verified(replay, make_op, asm_copy_k0, provider):
    """The same edit respaced, and a candidate the run tried in an earlier generation
    (``context.seen``): refused without a try, the engine never asked."""
    respaced = ["v_lshlrev_b32_e32  v2,2 ,v0"] + [t.replace(", ", ",") for t in WRONG[1:]]
    seen = []

    def run_seen(chain):
        seen.append(chain)
        return "gen 0 island 1 slot 1 (llm_agent try 1): equal" if \
            [list(e.lines) for e in chain] == [GOOD] else None

    srv = replay([turn(try_(WRONG)), turn(try_(respaced)), turn(try_(GOOD)),
                  turn(call("submit", rationale="nothing new"))])
    eng = Engine(MISMATCH)
    edit, ctx = converse(make_op, srv, provider, asm_copy_k0, eng, seen=run_seen)
    assert isinstance(edit, Rejected) and len(eng.tried) == 1
    (again,) = results(srv.received[2].body)
    assert again.startswith("refused: the same edit as try 1 (after normalizing")
    (elsewhere,) = results(srv.received[3].body)
    assert "this run tried the same candidate already (gen 0 island 1 slot 1" in elsewhere
    assert "no try used" in elsewhere and "3 tries left" in note(srv.received[3].body)
    assert len(seen) == 2          # the respaced try never got as far as the run's record


@pytest.mark.parametrize("provider", PROTOCOLS)
def test_submit_keeps_the_stack_and_an_untried_edit_on_top(replay, make_op, asm_copy_k0,
                                                          provider):
    srv = replay([turn(try_(GOOD)), turn(submit([], 9, 10))])
    eng = Engine(equal(1.0087))
    edits, _ = converse(make_op, srv, provider, asm_copy_k0, eng)
    assert [(e.start, e.end, e.lines) for e in edits] == [(12, 19, tuple(GOOD)), (9, 10, ())]
    assert len(eng.tried) == 1     # the untried one is for the engine to judge
    # submitting the accepted edit as it was tried is the stack itself
    srv2 = replay([turn(try_(GOOD)), turn(submit(GOOD))])
    edit, _ = converse(make_op, srv2, provider, asm_copy_k0, Engine(equal(1.0087)))
    assert list(edit.lines) == GOOD and (edit.start, edit.end) == (12, 19)


@pytest.mark.parametrize("provider", PROTOCOLS)
def test_a_single_call_duplicate_is_not_proposed(replay, make_op, asm_copy_k0, provider):
    from tests.operators.llm.conftest import tool_answer
    srv = replay([tool_answer(GOOD, "saddr")])
    ctx = make_context(asm_copy_k0, seen=lambda chain: "gen 2 island 0 slot 1: equal")
    out = make_op("llm_mutate", srv, **protocol(srv, provider)).mutate(K0, ctx)
    assert isinstance(out, Rejected) and "duplicate: the run tried this candidate already " \
        "(gen 2 island 0 slot 1: equal); not sent to verification" in out.reason
