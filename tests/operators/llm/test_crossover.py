"""``llm_crossover``: two parents' edits on different windows in one child (the rule
crossover's correspondence and conflict rules), and the merge of one window both
edited; on both protocols of the replay server."""
from __future__ import annotations

import pytest

from asmevo.edits import Edit
from asmevo.engine.individual import Individual
from asmevo.operator import Rejected
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.operators.llm.crossover import corresponding_window
from tests.operators.llm.conftest import GOOD, LOOP_BODY, make_context, protocol, tool_answer

SADDR = "s_and_saveexec_b64 s[14:15], s[12:13]"
# B: three improvements of K0 in three blocks (each verified by `asmevo candidate`)
B_EDITS = (Edit("asm_copy", 12, 19, tuple(GOOD)), Edit("asm_copy", 9, 10, ()),
           Edit("asm_copy", 20, 22, ("s_endpgm",)))



def edits_answer(*windows, rationale="take B's") -> dict:
    return {"kind": "tool_use", "tool": "propose_edits", "input": {
        "edits": [{"window": k, "replacement": list(lines)} for k, lines in windows],
        "rationale": rationale}}


def crossed(make_op, srv, provider, k0, a, b, **kw):
    ctx = make_context(k0, program_of=lambda i: apply_edits(k0, i.edits), **kw)
    return make_op("llm_crossover", srv, **protocol(srv, provider)).crossover(a, b, ctx), ctx


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_edits_on_different_windows_are_combined(replay, make_op, asm_copy_k0, provider):
    a = Individual("a", fitness=1.0, status="equal")                  # K0 itself
    b = Individual("b", B_EDITS, fitness=1.0131, status="equal")
    srv = replay([edits_answer((2, [SADDR]), (3, ["s_endpgm"]))])
    edits, _ = crossed(make_op, srv, provider, asm_copy_k0, a, b)
    # applied last window first, so each indexes A's program as the prompt showed it
    assert [(e.start, e.end, e.lines) for e in edits] == [(24, 26, ("s_endpgm",)),
                                                          (9, 11, (SADDR,))]
    child = [i.text for i in apply_edits(asm_copy_k0, edits).function("asm_copy").instructions]
    assert "s_nop 1" not in child and child[-2:] == ["s_cbranch_scc1 label_002C", "s_endpgm"]
    assert child[11:18] == LOOP_BODY                      # the window left out: A's lines
    text = srv.received[0].raw.replace("\\n", "\n")
    assert "(edits on different windows)" in text
    assert "Parent A runs at 1.000x of K0, parent B at 1.013x" in text
    # A's hot window first (the context's: the loop body), then in program order
    assert "### Window 1: A's instructions [13, 19)" in text
    assert "### Window 2: A's instructions [9, 11)\n  s_nop 1\n  " + SADDR in text
    assert "### Window 3: A's instructions [24, 26)" in text
    # the rule crossover's translation validation, window by window
    assert text.count("they may be taken as they are") == 2
    assert "B's lines differ from A's here (the side effects" in text


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_malformed_edit_list_is_refused(replay, make_op, asm_copy_k0, provider):
    a = Individual("a", fitness=1.0, status="equal")
    b = Individual("b", B_EDITS[:1], fitness=1.0087, status="equal")
    srv = replay([edits_answer((2, GOOD[1:]))])
    out, ctx = crossed(make_op, srv, provider, asm_copy_k0, a, b)
    assert isinstance(out, Rejected) and "edits must be distinct windows 1..1" in out.reason
    hostile = replay([edits_answer((1, ['.incbin "/etc/passwd"']))])
    out, _ = crossed(make_op, hostile, provider, asm_copy_k0, a, b)
    assert isinstance(out, Rejected) and "answer rejected" in out.reason


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_window_both_edited_is_merged(replay, make_op, asm_copy_k0, provider):
    """A conflict (both parents changed the loop body): no transfer; the model merges
    the two versions of one window, as before."""
    a = Individual("a", (Edit("asm_copy", 12, 19, tuple(GOOD) + ("s_nop 0",)),),
                   fitness=1.002, status="equal")
    b = Individual("b", B_EDITS[:1], fitness=1.0087, status="equal")
    srv = replay([tool_answer(GOOD, "drop the nop")])
    e, _ = crossed(make_op, srv, provider, asm_copy_k0, a, b, window=(12, 17))
    assert (e.start, e.end, list(e.lines)) == (12, 17, GOOD)
    text = srv.received[0].raw
    assert "Task: crossover of two parents" in text and "1.002x" in text and "1.009x" in text


def test_corresponding_window_follows_labels(asm_copy_k0):
    fa = asm_copy_k0.function("asm_copy")
    fb = apply_edits(asm_copy_k0, [Edit("asm_copy", 12, 19, tuple(GOOD))]).function("asm_copy")
    assert corresponding_window(fa, fb, 12, 19) == (12, 16)
    assert corresponding_window(fa, fb, 19, 24) == (16, 21)
