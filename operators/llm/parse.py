"""The model's answer into checked instruction lines, or the reason it is refused.

Order matters for safety: the tool call's JSON is checked against the schema
and the size bounds first, then every line's *shape* (no directive, no label,
one statement: :func:`check_lines`), then branch targets and privileged
instructions, and only then does any tool (``llvm-mc``, via
:func:`encode_lines`) see the text. A hostile line such as
``.incbin "/etc/passwd"`` never reaches the assembler.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu import sanitize
from asmevo.operators.llm.answer import Answer
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.sanitize import UnsafeEdit, check_lines

TOOL_NAME = "propose_edit"

class AnswerRejected(Refused):
    """An answer that yields no edit (a kind of the target's :class:`Refused`, its
    ``reason`` the message); ``kind`` is the usage table's status."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind          # "no_tool" | "rejected"


@dataclass(frozen=True)
class Proposal:
    lines: tuple[str, ...]
    rationale: str
    raw: dict


def tool_input(answer: Answer) -> dict:
    """The ``propose_edit`` tool call's input; free text around it is ignored."""
    calls = answer.tool_uses
    named = [b for b in calls if b.name == TOOL_NAME]
    if not named:
        what = f"tool call(s) {[b.name for b in calls]}" if calls else "text only"
        raise AnswerRejected("no_tool", f"answer has no {TOOL_NAME} tool call ({what})")
    if len(named) > 1:
        raise AnswerRejected("no_tool", f"answer has {len(named)} {TOOL_NAME} calls, expected one")
    data = named[0].input
    if not isinstance(data, dict):
        why = f" ({data[:200]})" if isinstance(data, str) else ""
        raise AnswerRejected("no_tool", f"{TOOL_NAME} input is not an object{why}")
    return data


def proposal(data: dict, *, max_lines: int, max_chars: int) -> Proposal:
    """Schema and size check of the tool input."""
    extra = sorted(set(data) - {"replacement", "rationale"})
    if extra:
        raise AnswerRejected("no_tool", f"{TOOL_NAME} has unexpected field {extra[0]!r}")
    lines = data.get("replacement")
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        raise AnswerRejected("no_tool", "replacement must be a list of strings")
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str):
        raise AnswerRejected("no_tool", "rationale must be a string")
    if len(lines) > max_lines:
        raise AnswerRejected("rejected",
                             f"replacement has {len(lines)} lines, more than {max_lines}")
    total = sum(len(x) for x in lines)
    if total > max_chars:
        raise AnswerRejected("rejected",
                             f"replacement has {total} characters, more than {max_chars}")
    one_line = " ".join(rationale.split())[:200]
    return Proposal(tuple(lines), one_line, data)


def check_shape(lines: tuple[str, ...], *, labels: set[str], original: list[str]) -> list[str]:
    """Shape, branch targets, privileged instructions; no external tool runs here."""
    try:
        checked = check_lines(list(lines))
    except UnsafeEdit as exc:
        raise AnswerRejected("rejected", exc.message) from None
    try:
        sanitize.check_introduced(checked, original)
    except UnsafeEdit as exc:
        raise AnswerRejected("rejected", exc.message) from None
    for i, text in enumerate(checked):
        mnemonic, _, operands = text.partition(" ")
        if mnemonic.startswith(("s_branch", "s_cbranch_")) and mnemonic not in (
                "s_cbranch_join", "s_cbranch_g_fork", "s_cbranch_i_fork"):
            target = operands.strip()
            if target not in labels:
                raise AnswerRejected("rejected", f"line {i}: branch to {target!r}, which is not "
                                     "a label of this function")
    return checked


def assemble_check(lines: list[str], target) -> None:
    """Each line must assemble alone for the target (llvm-mc names the failing line)."""
    if not lines:
        return
    try:
        sanitize.encode_lines(lines, target)
    except UnsafeEdit as exc:
        raise AnswerRejected("rejected", exc.message) from None


def checked_lines(lines, *, target, labels: set[str], original: list[str]) -> list[str]:
    """Instruction lines from a model, checked in the safe order: shape, branch targets
    and privileged instructions first, and only then the assembler."""
    checked = check_shape(tuple(lines), labels=labels, original=original)
    assemble_check(checked, target)
    return checked


def sanitized_lines(answer: Answer, *, target, labels: set[str], original: list[str],
                    max_lines: int, max_chars: int) -> Proposal:
    """The whole path from an answer to lines that may become an Edit."""
    p = proposal(tool_input(answer), max_lines=max_lines, max_chars=max_chars)
    checked = checked_lines(p.lines, target=target, labels=labels, original=original)
    return Proposal(tuple(checked), p.rationale, p.raw)
