"""Messages-API requests as OpenAI chat-completions bodies, and their usage back.

The operators build every request in the Messages API's shape; for
``provider = "openai"`` this module rewrites it, losslessly for what the
operators use, into the body an OpenAI-compatible server (OpenAI, vLLM,
llama.cpp, Ollama, SGLang) expects:

- the system blocks become one ``system`` message (texts joined by a blank line);
- each tool becomes ``{"type": "function", "function": {name, description, parameters}}``;
- ``tool_choice`` ``{"type": "tool", "name": N}`` becomes the named function,
  ``{"type": "any"}`` becomes ``"required"``, ``{"type": "auto"}`` ``"auto"``;
- an assistant turn's ``tool_use`` blocks become ``tool_calls`` (arguments as
  canonical JSON text), each ``tool_result`` a ``role: "tool"`` message, in order;
- ``cache_control`` marks are dropped: these servers cache prefixes by
  themselves (OpenAI above 1,024 tokens, vLLM with prefix caching on), which is
  why the static parts of every request come first and never change.

The body stored in the archive is this translated one: what the server received.
"""
from __future__ import annotations

import json

from asmevo.operators.llm.answer import from_chat_completion
from asmevo.operators.llm.pricing import Usage, getter, token_count
from asmevo.operators.llm.provider import Provider


def chat_body(request: dict) -> dict:
    """The chat-completions body for a Messages-shaped ``request``."""
    body: dict = {"model": request["model"], "max_tokens": request["max_tokens"]}
    if "temperature" in request:
        body["temperature"] = request["temperature"]
    messages: list[dict] = []
    system = request.get("system") or []
    texts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    if any(texts):
        messages.append({"role": "system", "content": "\n\n".join(t for t in texts if t)})
    for m in request.get("messages", []):
        messages.extend(_message(m))
    body["messages"] = messages
    if request.get("tools"):
        body["tools"] = [{"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t["input_schema"]}} for t in request["tools"]]
    choice = request.get("tool_choice")
    if choice:
        kind = choice.get("type")
        body["tool_choice"] = ({"type": "function", "function": {"name": choice["name"]}}
                               if kind == "tool" else "required" if kind == "any" else "auto")
    return body


def _message(m: dict) -> list[dict]:
    content = m.get("content")
    if isinstance(content, str):
        return [{"role": m["role"], "content": content}]
    if m["role"] == "assistant":
        text = "\n".join(b["text"] for b in content if b.get("type") == "text")
        calls = [{"id": b["id"], "type": "function",
                  "function": {"name": b["name"], "arguments": json.dumps(
                      b.get("input", {}), sort_keys=True, separators=(",", ":"))}}
                 for b in content if b.get("type") == "tool_use"]
        out: dict = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        return [out]
    out_msgs: list[dict] = []
    texts: list[str] = []
    for b in content:
        if b.get("type") == "tool_result":
            out_msgs.append({"role": "tool", "tool_call_id": b["tool_use_id"],
                             "content": _result_text(b.get("content"))})
        elif b.get("type") == "text":
            texts.append(b["text"])
    if texts:
        out_msgs.append({"role": m["role"], "content": "\n\n".join(texts)})
    return out_msgs


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def chat_usage(usage) -> Usage:
    """Usage of a chat completion: ``prompt_tokens`` includes the cached ones, which
    these servers report as ``prompt_tokens_details.cached_tokens`` (cache reads;
    writing their cache costs nothing extra)."""
    get = getter(usage)
    prompt, a = token_count(get("prompt_tokens", None), "prompt_tokens")
    completion, b = token_count(get("completion_tokens", None), "completion_tokens")
    cached, c = token_count(getter(get("prompt_tokens_details", None) or {})(
        "cached_tokens", None), "cached_tokens")
    cached = min(prompt, cached)
    return Usage(prompt - cached, completion, 0, cached, note="; ".join(n for n in (a, b, c) if n))


class ChatCompletions(Provider):
    """Any OpenAI-compatible chat-completions endpoint (``provider = "openai"``)."""

    name = "openai"
    sdk = "openai"
    default_url = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    needs_model = True       # the server's own model, e.g. "Qwen/Qwen2.5-Coder-32B-Instruct"
    lists_models = True      # vLLM, llama.cpp: GET /models only

    def client(self, sdk, **options):
        return sdk.OpenAI(**options)

    def create(self, client):
        return client.chat.completions.create

    def body(self, request: dict) -> dict:
        return chat_body(request)

    def answer(self, message):
        return from_chat_completion(message), chat_usage(self.usage_of(message))
