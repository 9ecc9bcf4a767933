"""What comes back is untrusted: only plain, assembling instruction lines pass."""
from __future__ import annotations

import pytest

from asmevo.targets.amdgpu import sanitize
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.operators.llm.answer import from_messages_api
from asmevo.operators.llm.parse import AnswerRejected, check_shape, proposal, sanitized_lines, tool_input

TARGET = TargetId("gfx942")
LABELS = {"label_002C", "label_0070"}


class Block:
    def __init__(self, type, **kw):
        self.type = type
        self.__dict__.update(kw)


def Msg(*blocks):  # noqa: N802 (reads like the SDK message it stands for)
    """An SDK-like message with these content blocks, as the client turns it into an Answer."""
    return from_messages_api({"content": list(blocks)})


def answer(lines, rationale="r", **extra):
    return Msg(Block("text", text="Sure! Here is my edit."),
               Block("tool_use", name="propose_edit", input={"replacement": lines,
                                                             "rationale": rationale, **extra}))


@pytest.fixture
def encoder_calls(monkeypatch):
    """Every call that reaches llvm-mc, recorded (the real encoder still runs)."""
    calls = []
    real = sanitize.encode_lines

    def spy(lines, target, **kw):
        calls.append(list(lines))
        return real(lines, target, **kw)

    monkeypatch.setattr(sanitize, "encode_lines", spy)
    return calls


def run(lines, **kw):
    return sanitized_lines(answer(lines, **kw), target=TARGET, labels=LABELS, original=[],
                           max_lines=64, max_chars=4000)


def test_good_answer_passes_and_free_text_is_ignored(encoder_calls):
    p = run(["v_lshlrev_b32_e32 v2, 2, v1", "global_load_dword v8, v2, s[4:5]  // comment"])
    assert p.lines == ("v_lshlrev_b32_e32 v2, 2, v1", "global_load_dword v8, v2, s[4:5]")
    assert encoder_calls == [list(p.lines)]


@pytest.mark.parametrize("hostile", [
    '.incbin "/etc/passwd"', ".include \"x.s\"", ".set foo, 1", ".section .data",
    ".macro m", ".byte 0x90", "v_nop ; .incbin \"/etc/passwd\"",
    "s_mov_b32 s0, .incbin",
])
def test_directives_are_rejected_before_any_tool_sees_them(encoder_calls, hostile):
    with pytest.raises(AnswerRejected) as e:
        run(["v_lshlrev_b32_e32 v2, 2, v1", hostile, "s_endpgm"])
    assert e.value.kind == "rejected" and "line 1" in e.value.reason
    assert encoder_calls == []            # llvm-mc never ran for this answer


def test_label_definition_rejected(encoder_calls):
    with pytest.raises(AnswerRejected, match="label definitions are not allowed"):
        run(["my_loop:", "s_branch my_loop"])
    assert encoder_calls == []


def test_branch_to_a_label_outside_the_function_rejected(encoder_calls):
    with pytest.raises(AnswerRejected, match="not a label of this function"):
        run(["s_cbranch_scc1 somewhere_else"])
    assert run(["s_cbranch_scc1 label_002C"]).lines == ("s_cbranch_scc1 label_002C",)


def test_privileged_instruction_needs_to_be_in_the_original_window():
    """The window's own privileged instruction may stay (the exact text, as often as
    the window has it); another one, or the same mnemonic elsewhere, may not."""
    with pytest.raises(AnswerRejected, match="s_setpc_b64 is not allowed"):
        check_shape(("s_setpc_b64 s[0:1]",), labels=set(), original=["s_nop 0"])
    with pytest.raises(AnswerRejected, match="s_setpc_b64 is not allowed"):
        check_shape(("s_setpc_b64 s[0:1]",), labels=set(), original=["s_setpc_b64 s[2:3]"])
    assert check_shape(("s_nop 0", "s_setpc_b64  s[2:3]"), labels=set(),
                       original=["s_setpc_b64 s[2:3]", "s_nop 0"])
    with pytest.raises(AnswerRejected, match="s_dcache_wb is not allowed"):
        check_shape(("s_dcache_wb", "s_dcache_wb"), labels=set(), original=["s_dcache_wb"])


def test_wrong_register_count_rejected_with_llvm_mc_reason(encoder_calls):
    with pytest.raises(AnswerRejected) as e:
        run(["v_lshlrev_b32_e32 v2, 2, v1", "v_lshl_add_u64 v[4:6], s[4:5], 0, v[2:3]"])
    assert "line 1" in e.value.reason and "invalid operand for instruction" in e.value.reason
    assert len(encoder_calls) == 1


def test_non_assembling_line_rejected_with_reason():
    with pytest.raises(AnswerRejected, match="too few operands"):
        run(["v_add_f32 v1, v2"])


def test_size_bounds():
    with pytest.raises(AnswerRejected, match="more than 64"):
        run(["s_nop 0"] * 65)
    with pytest.raises(AnswerRejected, match="characters, more than"):
        sanitized_lines(answer(["s_nop 0"] * 40), target=TARGET, labels=LABELS, original=[],
                        max_lines=64, max_chars=100)
    with pytest.raises(AnswerRejected, match="longer than"):
        run(["s_nop 0" + " " * 300 + "0"])


def test_text_only_answer_is_no_tool():
    with pytest.raises(AnswerRejected) as e:
        tool_input(Msg(Block("text", text="I would remove the s_nop.")))
    assert e.value.kind == "no_tool" and "text only" in e.value.reason


@pytest.mark.parametrize("data, text", [
    ({"replacement": "s_nop 0", "rationale": "x"}, "list of strings"),
    ({"replacement": [1, 2], "rationale": "x"}, "list of strings"),
    ({"rationale": "x"}, "list of strings"),
    ({"replacement": [], "rationale": "x", "extra": 1}, "unexpected field 'extra'"),
])
def test_schema_violations(data, text):
    with pytest.raises(AnswerRejected, match=text):
        proposal(data, max_lines=10, max_chars=100)


def test_two_tool_calls_rejected():
    b = Block("tool_use", name="propose_edit", input={"replacement": [], "rationale": ""})
    with pytest.raises(AnswerRejected, match="expected one"):
        tool_input(Msg(b, b))


def test_rationale_is_one_line():
    p = proposal({"replacement": [], "rationale": "a\nb\n" + "c" * 500}, max_lines=1, max_chars=1)
    assert "\n" not in p.rationale and len(p.rationale) <= 200
