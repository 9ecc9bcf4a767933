"""Tool calls a model wrote as JSON in its answer's text, for servers without a tool parser.

A local server that does not parse its model's tool calls (vLLM without
``--tool-call-parser``, llama.cpp without ``--jinja``, a chat template the parser does not
know) returns them as text; without this every such answer would end a conversation as
"an answer without a tool call". When an answer has no tool call, its text is read for
one, in the formats local models write:

- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one block a call;
- a fenced block: ```` ```json {...} ``` ```` (or ```` ```tool_call ````, or no language);
- a bare JSON object (or a list of them, as Mistral's ``[TOOL_CALLS] [...]``) anywhere in
  the text.

A call object is ``{"name": N, "arguments": A}`` (also ``"parameters"`` or ``"input"``
for ``A``, ``"tool"`` for ``N``, and OpenAI's ``{"function": {"name", "arguments"}}``),
``A`` an object or a JSON string holding one; ``N`` must be a tool the request offered.
Where the request offered one tool only, an object with exactly that tool's fields
(every required one, none unknown) is a call of it: a model asked to call
``propose_edit`` that writes its arguments alone.

The text is untrusted and as large as the stored-answer cap allows: it is scanned once
(no parse is tried at every brace), at most :data:`MAX_SPANS` spans are parsed, each
within ``ASMEVO_MAX_JSON_DEPTH`` (:mod:`asmevo.jsontext`), and at most
:data:`MAX_CALLS` calls are taken.
"""
from __future__ import annotations

import re

from asmevo import jsontext, knobs
from asmevo.operators.llm.answer import Answer, ToolUse

MAX_SPANS = 64          # JSON spans parsed in one answer
MAX_CALLS = 16          # tool calls taken from one answer
MAX_TOKENS = 250_000    # strings and brackets the scan steps over in one answer

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_FENCED = re.compile(r"```[ \t]*(?:json|tool_call|tool_code|javascript)?[ \t]*\n(.*?)```", re.S)
_OPEN = re.compile(r"[{\[]")
# a string (one never closed runs to the end: no scan fails and starts again) or a bracket
_INNER = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[{}\[\]]', re.S)
_CLOSE = {"{": "}", "[": "]"}


def spans(text: str) -> list[str]:
    """Balanced top-level JSON-looking spans of ``text``, in order: from a ``{`` or ``[``
    outside any span to its matching close (brackets inside strings ignored, quotes
    outside spans ignored too: prose has them). A span that never closes, closes with
    the wrong bracket or nests past the limit is dropped and the scan goes on one
    character later; at most :data:`MAX_SPANS` starts are tried and :data:`MAX_TOKENS`
    strings and brackets stepped over, whatever the text."""
    limit = knobs.MAX_JSON_DEPTH.value
    out: list[str] = []
    pos, starts, steps = 0, 0, 0
    while starts < MAX_SPANS and steps < MAX_TOKENS:
        m = _OPEN.search(text, pos)
        if m is None:
            break
        starts += 1
        stack, end = [], None
        for t in _INNER.finditer(text, m.start()):
            steps += 1
            if steps > MAX_TOKENS:
                break
            tok = t.group()
            if tok in _CLOSE:
                stack.append(tok)
                if len(stack) > limit:
                    break
            elif tok in "}]":
                if not stack or _CLOSE[stack.pop()] != tok:
                    break
                if not stack:
                    end = t.end()
                    break
        if end is None:
            pos = m.start() + 1
            continue
        out.append(text[m.start():end])
        pos = end
    return out


def _regions(text: str) -> tuple[list[str], str]:
    """Where calls may be: the tagged blocks, else the fenced ones, else the whole text;
    and which format that is."""
    tagged = _TAGGED.findall(text)
    if tagged:
        return tagged, "<tool_call> tags"
    fenced = _FENCED.findall(text)
    if fenced:
        return fenced, "a fenced block"
    return [text], "JSON in the text"


def _call(obj, tools: dict[str, dict]) -> tuple[str, dict] | None:
    """(name, input) of one call object, or None."""
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict) and "name" in fn:
        obj = fn
    name = obj.get("name", obj.get("tool"))
    args = next((obj[k] for k in ("arguments", "parameters", "input") if k in obj), None)
    if isinstance(name, str) and name in tools:
        if isinstance(args, str):
            try:
                args = jsontext.loads(args, "tool arguments")
            except jsontext.JsonError:
                return None
        return (name, args) if isinstance(args, dict) else None
    if len(tools) == 1:             # the arguments alone, of the one tool offered
        (only, schema), = tools.items()
        props = set(schema.get("properties", {}))
        if set(schema.get("required", [])) <= set(obj) <= props:
            return only, obj
    return None


def text_calls(text: str, tools: dict[str, dict]) -> tuple[list[tuple[str, dict]], str]:
    """The calls written in ``text`` of the tools ``tools`` (name -> input schema), and the
    format they were found in ("" when none)."""
    regions, how = _regions(text)
    calls: list[tuple[str, dict]] = []
    for region in regions:
        for span in spans(region):
            try:
                value = jsontext.loads(span, "a tool call in the answer's text")
            except jsontext.JsonError:
                continue
            for obj in value if isinstance(value, list) else [value]:
                call = _call(obj, tools)
                if call is not None and len(calls) < MAX_CALLS:
                    calls.append(call)
    return calls, how if calls else ""


def with_text_calls(answer: Answer, request: dict) -> tuple[Answer, str]:
    """``answer`` with the tool calls its text holds, when it has none of its own and the
    request offered tools; and a note saying so ("" when nothing was read)."""
    tools = {t.get("name"): t.get("input_schema") or {} for t in request.get("tools") or []
             if isinstance(t, dict)}
    if answer.tool_uses or not tools or not answer.text:
        return answer, ""
    calls, how = text_calls(answer.text, tools)
    if not calls:
        return answer, ""
    uses = tuple(ToolUse(f"text_{k}", name, args) for k, (name, args) in enumerate(calls))
    note = f"{len(uses)} tool call(s) read from the answer's text ({how})"
    return Answer(answer.text, uses, answer.stop), note
