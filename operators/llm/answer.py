"""A model's answer in one shape, whatever the provider said it in.

Requests are built in the Messages API's shape (content blocks: ``text``,
``tool_use``, ``tool_result``) and a provider that speaks another protocol
translates them on the way out (:mod:`asmevo.operators.llm.openai_wire`); answers come
back as an :class:`Answer`: the text and the tool calls, in order. An Answer is
plain JSON-ready data, so the archive can keep it and a resumed run can read
it back instead of asking again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from asmevo import jsontext
from asmevo.operators.llm.pricing import getter


@dataclass(frozen=True)
class ToolUse:
    """One tool call: ``input`` is what the model sent (an object when well formed)."""

    id: str
    name: str
    input: object

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "input": self.input}


@dataclass(frozen=True)
class Answer:
    text: str = ""
    tool_uses: tuple[ToolUse, ...] = ()
    stop: str = ""                    # the provider's stop/finish reason

    def to_json(self) -> dict:
        return {"text": self.text, "tool_uses": [t.to_json() for t in self.tool_uses],
                "stop": self.stop}

    @staticmethod
    def from_json(d: dict) -> "Answer":
        """From :meth:`to_json` (an archived answer)."""
        if not isinstance(d, dict):
            raise ValueError("an archived answer is an object")
        uses = tuple(ToolUse(str(t["id"]), str(t["name"]), t["input"])
                     for t in d.get("tool_uses", []))
        return Answer(str(d.get("text", "")), uses, str(d.get("stop", "")))

    def blocks(self) -> list[dict]:
        """The assistant message's content blocks (Messages-API shape) for a transcript."""
        out: list[dict] = [{"type": "text", "text": self.text}] if self.text else []
        for t in self.tool_uses:
            out.append({"type": "tool_use", "id": t.id, "name": t.name,
                        "input": t.input if isinstance(t.input, dict) else {}})
        return out


def from_messages_api(message) -> Answer:
    """An Answer from an ``anthropic`` SDK message (or a dict of the same shape)."""
    get = _getter(message)
    text, uses = [], []
    for block in get("content") or []:
        b = _getter(block)
        if b("type") == "text":
            text.append(str(b("text") or ""))
        elif b("type") == "tool_use":
            uses.append(ToolUse(str(b("id") or ""), str(b("name") or ""), b("input")))
    return Answer("\n".join(t for t in text if t), tuple(uses), str(get("stop_reason") or ""))


def from_chat_completion(response) -> Answer:
    """An Answer from an ``openai`` SDK chat completion (or a dict of the same shape).

    Tool arguments arrive as a JSON string, parsed within the limits of
    :mod:`asmevo.jsontext` (nesting measured before parsing); one that does not
    parse is kept as a string saying why, which the operators then refuse (an input
    must be an object). A call without an id keeps an empty one (the agent names it
    by turn and position).
    """
    get = _getter(response)
    choices = get("choices") or []
    if not choices:
        return Answer(stop="no choices")
    choice = _getter(choices[0])
    msg = _getter(choice("message") or {})
    uses = []
    for call in msg("tool_calls") or []:
        c = _getter(call)
        fn = _getter(c("function") or {})
        raw = fn("arguments")
        try:
            args = jsontext.loads(raw, "tool arguments") if isinstance(raw, str) else raw
        except jsontext.JsonError as exc:
            args = f"refused: {exc.message}"
        uses.append(ToolUse(str(c("id") or ""), str(fn("name") or ""), args))
    return Answer(str(msg("content") or ""), tuple(uses), str(choice("finish_reason") or ""))


_getter = getter      # over a dict or an SDK model's attributes


# -- what is kept of an answer ---------------------------------------------------------------
# An answer is used and archived as the same value, so a resumed run rereads exactly what
# the uninterrupted one used. Past ASMEVO_LLM_MAX_STORED_ANSWER_BYTES (far above any answer
# an operator can use: 192 lines of 12,000 characters) it is cut, once, before either:
# the text first, then the largest tool inputs (each replaced by a string saying so, which
# no tool accepts), then the last tool calls; names, ids and the stop reason are always
# cut to NAME_CHARS.

NAME_CHARS = 200


def _bytes(value) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def capped(answer: Answer, cap: int) -> tuple[Answer, str]:
    """``answer`` as kept within ``cap`` bytes of JSON, and what was cut ("" if nothing)."""
    uses = [ToolUse(t.id[:NAME_CHARS], t.name[:NAME_CHARS], t.input) for t in answer.tool_uses]
    text, stop = answer.text, answer.stop[:NAME_CHARS]
    size = _bytes(answer.to_json())
    if size <= cap and all(len(t.id) + len(t.name) <= 2 * NAME_CHARS for t in answer.tool_uses):
        return Answer(text, tuple(uses), stop), ""
    cut = []
    if len(text) > cap // 4:
        text = f"{text[:cap // 4]} [cut: {len(answer.text):,} characters]"
        cut.append("text")
    sizes = [_bytes(t.to_json()) for t in uses]
    total = _bytes(text) + sum(sizes) + 64
    for i in sorted(range(len(uses)), key=lambda k: -sizes[k]):
        if total <= cap:
            break
        t = uses[i]
        uses[i] = ToolUse(t.id, t.name, f"[input of {_bytes(t.input):,} bytes not kept]")
        total += _bytes(uses[i].to_json()) - sizes[i]
        cut.append(f"input of {t.name[:40]!r}")
    while uses and total > cap:
        total -= _bytes(uses.pop().to_json())
        cut.append("a tool call")
    kept = Answer(text, tuple(uses), stop)
    note = (f"answer of {size:,} bytes kept as {_bytes(kept.to_json()):,} "
            f"(ASMEVO_LLM_MAX_STORED_ANSWER_BYTES = {cap:,}; cut: {_summary(cut)})")
    return kept, note if size > cap else ""


def _summary(cut: list[str]) -> str:
    counts: dict[str, int] = {}
    for c in cut:
        counts[c] = counts.get(c, 0) + 1
    return ", ".join(c if n == 1 else f"{n} x {c}" for c, n in list(counts.items())[:4]) or \
        "names"
