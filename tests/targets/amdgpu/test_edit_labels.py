"""Generated labels in edits (``.Lae_<hex>:``): one grammar, admitted only where the
caller allows it (rule edits and replay, never the LLM path), fresh in the program,
branches kept inside the function, replayable from JSON, and real code built from them."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.edits import Edit, edits_from_json, edits_to_json, instruction_count, label_of
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.targets.amdgpu.program import EditError, Label
from asmevo.targets.amdgpu.sanitize import UnsafeEdit, check_line, check_lines
from asmevo.operators.llm.parse import AnswerRejected, check_shape
from tests.operators.rules.loop_helpers import SUM_LOOP, program, run, text_of

NOT_LABELS = [".Lae_1F:", ".Lae_:", ".Lae_12345678901234567:", ".LBB_10:", "foo:", ".Lae_1f",
              ".Lae_1f: s_nop 0", " .Lae_1f:x", ".Lae_1f:: ", ".set x, 1", ".Lae_1f:;s_nop 0"]


def test_the_grammar():
    assert label_of(".Lae_1f:") == ".Lae_1f"
    assert label_of(".Lae_0123456789abcdef:") == ".Lae_0123456789abcdef"
    assert all(label_of(t) is None for t in NOT_LABELS)
    assert instruction_count(["s_nop 0", ".Lae_a:", "s_branch .Lae_a"]) == 2


@pytest.mark.parametrize("line", NOT_LABELS)
def test_nothing_else_label_shaped_passes_even_where_labels_are_allowed(line):
    with pytest.raises(UnsafeEdit):
        check_line(line, labels=True)


def test_labels_pass_only_where_the_caller_allows_them():
    assert check_lines([".Lae_1f:", "s_branch .Lae_1f"], labels=True)[0] == ".Lae_1f:"
    with pytest.raises(UnsafeEdit, match="directive"):
        check_lines([".Lae_1f:"])
    # the LLM path checks with the default: a label in a model's answer is refused
    with pytest.raises(AnswerRejected):
        check_shape((".Lae_1f:", "s_nop 0"), labels={".Lae_1f"}, original=["s_nop 0"])


def _loop():
    prog, fn = program(SUM_LOOP)
    start = next(k for k, i in enumerate(fn.instructions) if i.mnemonic == "global_load_dword")
    return prog, fn, start


def test_a_label_lands_where_its_line_is_and_windows_count_instructions():
    prog, fn, s = _loop()
    edit = Edit("k", s, s + 1, ("s_branch .Lae_9", ".Lae_9:", fn.instructions[s].text))
    after = apply_edit(prog, edit).function("k")
    assert len(after.instructions) == len(fn.instructions) + 1
    k = next(n for n, i in enumerate(after.items) if isinstance(i, Label) and i.name == ".Lae_9")
    assert after.items[k - 1].text == "s_branch .Lae_9"
    assert after.items[k + 1].text == fn.instructions[s].text


@pytest.mark.parametrize("lines, match", [
    (("s_branch .Lae_9", ".Lae_9:", ".Lae_9:"), "twice"),
    (("s_branch .Lae_9", ".Lae_9:"), None),
    (("s_branch other_kernel",), "not a label of k"),
    (("s_cbranch_scc0 .Lae_7",), "not a label of k"),
])
def test_labels_must_be_fresh_and_branches_stay_in_the_function(lines, match):
    prog, fn, s = _loop()
    edit = Edit("k", s, s + 1, lines + (fn.instructions[s].text,))
    if match is None:        # fine once; the same label again clashes with the first
        prog2 = apply_edit(prog, edit)
        with pytest.raises(EditError, match="already exists"):
            apply_edit(prog2, Edit("k", 0, 1, (".Lae_9:", prog2.function("k").instructions[0].text)))
        return
    with pytest.raises(EditError, match=match):
        apply_edit(prog, edit)


def test_edits_with_labels_replay_from_json_and_run():
    """A loop peeled once by hand with a generated label: built, run, equal to K0."""
    prog, fn, s = _loop()
    body = [i.text for i in fn.instructions[s:s + 6]]
    end = s + 7
    peeled = body + ["s_cbranch_scc1 .Lae_e", "s_branch .Lae_d", ".Lae_d:"] + body + \
        ["s_cbranch_scc0 .Lae_d", ".Lae_e:"]
    edit = Edit("k", s, end, tuple(peeled), operator="test")
    back = edits_from_json(edits_to_json((edit,)))
    assert back == (edit,) and back[0].key == edit.key
    new = apply_edit(prog, back[0])
    build_program(new)                     # assembles and links
    x = np.arange(16 * 5, dtype=np.float32)
    for n in (1, 2, 5):
        a = run(text_of(fn), s={5: n}, buffers={"x": x[:16 * n].copy()}, ptrs={"x": 2})
        b = run(text_of(new.function("k")), s={5: n}, buffers={"x": x[:16 * n].copy()},
                ptrs={"x": 2})
        assert np.array_equal(a.v(4), b.v(4)), n
