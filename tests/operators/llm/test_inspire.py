"""What an LLM prompt learns from the population: inspirations (accepted edits of every
island, with their lines and gains) and prompt variants that evolve with it."""
from __future__ import annotations

import random

import pytest

from asmevo.edits import Edit
from asmevo.engine.individual import Individual
from asmevo.engine.inspirations import Found, select
from asmevo.operator import Change, Inspiration, Rejected
from asmevo.operators.llm import variants
from tests.operators.llm.conftest import (GOOD, K0, LOOP_BODY, make_context, protocol,
                                          tool_answer)
from tests.operators.llm.test_agent import Engine, call, equal, try_, turn

ISLAND_0 = Inspiration("island 0, gen 2", "llm_agent", (
    Change("asm_copy", 12, 19, tuple(LOOP_BODY), tuple(GOOD)),), 1.0087, 1.0087)
ISLAND_1 = Inspiration("island 1, gen 3", "llm_mutate", (
    Change("asm_copy", 9, 10, ("s_nop 1",), ()),
    Change("asm_copy", 20, 22, ("s_waitcnt vmcnt(0)", "s_endpgm"), ("s_endpgm",))),
    1.0044, 1.0131)



@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_inspirations_from_two_islands_reach_the_prompt(replay, make_op, asm_copy_k0, provider):
    srv = replay([turn(call("submit", rationale="nothing")), tool_answer(GOOD)])
    asked = []

    def inspirations(best, diverse):
        asked.append((best, diverse))
        return (ISLAND_0, ISLAND_1)

    ctx = make_context(asm_copy_k0, inspirations=inspirations)
    make_op("llm_agent", srv, **protocol(srv, provider)).mutate(K0, ctx)
    make_op("llm_mutate", srv, inspirations=1, diverse_inspirations=4,
            **protocol(srv, provider)).mutate(K0, make_context(asm_copy_k0,
                                                                 inspirations=inspirations))
    assert asked == [(3, 2), (1, 4)]
    for r in srv.received:
        text = r.raw.replace("\\n", "\n")
        assert "### What worked (accepted edits of this run, every island" in text
        assert "#### 1. island 0, gen 2 (llm_agent): 1.0087x over its parent, 1.0087x " \
               "over its K0 (modeled)" in text
        assert "#### 2. island 1, gen 3 (llm_mutate): 1.0044x over its parent" in text
        # the lines themselves, before and after, each window of the edit
        assert "[12, 19) of `asm_copy`: 7 -> 4 lines\nbefore:\n  v_lshlrev_b32_e32 v2, 2, " \
               "v1\n  v_mov_b32_e32 v3, 0" in text
        assert "after:\n  v_lshlrev_b32_e32 v2, 2, v1\n  global_load_dword v8, v2, s[4:5]" in text
        assert "[9, 10) of `asm_copy`: 1 -> 0 lines\nbefore:\n  s_nop 1\nafter:\n  (none: " \
               "the lines were deleted)" in text


def test_no_inspirations_asked_when_the_config_wants_none(replay, make_op, asm_copy_k0):
    srv = replay([tool_answer(GOOD)])
    asked = []
    ctx = make_context(asm_copy_k0, inspirations=lambda b, d: asked.append(1) or ())
    make_op("llm_mutate", srv, inspirations=0, diverse_inspirations=0).mutate(K0, ctx)
    assert asked == [] and "What worked" not in srv.received[0].raw


def _found(island, gain, lines, generation=1):
    edit = Edit("asm_copy", 12, 19, tuple(lines))
    return Found(f"island {island}, gen {generation}", f"island {island}", "llm_mutate",
                 generation, (), (edit,), gain, gain, "modeled", None, island)


def test_select_takes_the_best_then_other_islands_and_unlike_edits():
    a = _found(0, 1.30, ["v_add_u32 v1, v2, v3"])
    a_again = _found(0, 1.10, ["v_add_u32 v1, v2, v3"], generation=2)   # the same edit
    b = _found(0, 1.20, ["v_add_u32 v1, v2, v3", "s_nop 0"])
    c = _found(1, 1.01, ["global_load_dword v8, v2, s[4:5]"])
    other = Found("run old (kernel softmax)", "run old", "llm_agent", 0, (),
                  (Edit("softmax", 3, 5, ("v_exp_f32 v1, v2",)),), 1.5, 1.5, "modeled", None)
    assert select([a, a_again, b, c], [], 1, 0) == [a]
    # the diverse one comes from the island not shown yet, though its gain is the lowest
    assert select([a, a_again, b, c], [], 1, 1) == [a, c]
    # another run is another source too, and its edits are the least like a's
    assert select([a, a_again, b, c], [other], 1, 2) == [a, other, c]
    assert select([a, b, c], [other], 2, 5) == [a, b, other, c]


def test_variants_are_inherited_and_mutated():
    tagged = Edit("asm_copy", 12, 19, tuple(GOOD), "llm_mutate", "why [llm call x] [prompt 1.4]")
    assert variants.of_edits((tagged, Edit("asm_copy", 0, 1, ("s_nop 0",), "nop_insert"))) \
        == (1, 4)
    assert variants.of_edits(()) == () and variants.tag(()) == "[prompt -]"
    assert variants.inherit((tagged,), 0.0, None) is None            # off: nothing drawn
    rng = random.Random(3)
    seen = {variants.inherit((tagged,), 1.0, rng) for _ in range(60)}
    assert all(len(v) <= variants.MAX_HINTS and v != (1, 4) for v in seen) and len(seen) > 5
    assert all(len(set(v) ^ {1, 4}) <= 2 for v in seen)               # one step away


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_mutated_variant_is_in_the_system_prompt_and_the_edit(replay, make_op, asm_copy_k0,
                                                                 provider):
    parent = Individual("p", (Edit("asm_copy", 24, 26, ("s_endpgm",), "llm_mutate",
                                   "[prompt 1.4]"),), fitness=1.01, status="equal")
    srv = replay([turn(try_(GOOD)), turn(call("submit", rationale="r")), tool_answer(GOOD)])
    ctx = make_context(asm_copy_k0, try_edit=Engine(equal(1.2)), slot=1)
    edit = make_op("llm_agent", srv, prompt_mutation=1.0,
                   **protocol(srv, provider)).mutate(parent, ctx)
    v = variants.inherit(parent.edits, 1.0, random.Random(1))       # what slot 1's rng draws
    assert v != (1, 4) and edit.note.endswith(variants.tag(v))
    for r in srv.received[:2]:
        hints = [variants.HINTS[h] for h in v]
        assert all(h.replace('"', '\\"') in r.raw for h in hints) and "# Emphasis" in r.raw
    # off (the default): not a byte of it
    plain = make_op("llm_mutate", srv, **protocol(srv, provider)).mutate(parent, make_context(
        asm_copy_k0, slot=1))
    assert not isinstance(plain, Rejected) and "[prompt" not in plain.note
    assert "# Emphasis" not in srv.received[2].raw
