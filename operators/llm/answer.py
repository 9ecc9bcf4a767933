"""A model's answer in one shape, whatever the provider said it in.

Requests are built in the Messages API's shape (content blocks: ``text``,
``tool_use``, ``tool_result``) and a provider that speaks another protocol
translates them on the way out (:mod:`operators.llm.openai_wire`); answers come
back as an :class:`Answer`: the text and the tool calls, in order. An Answer is
plain JSON-ready data, so the archive can keep it and a resumed run can read
it back instead of asking again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass


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

    Tool arguments arrive as a JSON string; one that does not parse is kept as the
    string, which the operators then refuse (an input must be an object). A call
    without an id keeps an empty one (the agent names it by turn and position).
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
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            args = raw
        uses.append(ToolUse(str(c("id") or ""), str(fn("name") or ""), args))
    return Answer(str(msg("content") or ""), tuple(uses), str(choice("finish_reason") or ""))


def _getter(obj):
    if isinstance(obj, dict):
        return obj.get
    return lambda k, d=None: getattr(obj, k, d)
