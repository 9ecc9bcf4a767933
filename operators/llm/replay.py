"""A local stand-in for the Anthropic Messages API and OpenAI chat completions that
replays recorded exchanges.

Tests point an SDK's ``base_url`` at it; users can run it for an offline demo
(``python -m asmevo.operators.llm.replay script.json``). It listens on 127.0.0.1 only,
on an ephemeral port, in a daemon thread (stdlib ``http.server``). One server
speaks both protocols, by path: ``POST /v1/messages`` (Anthropic: base_url
``http://127.0.0.1:PORT``) and ``POST /v1/chat/completions`` (OpenAI: base_url
``http://127.0.0.1:PORT/v1``); a script is written once for both.

A script is a JSON list of exchanges (or ``{"exchanges": [...]}``). Each
request takes the first unused exchange whose ``match`` holds (no ``match``:
any request), so a script can be strictly ordered or keyed on text in the
request. An exchange says what to answer:

- ``{"kind": "tool_use", "input": {...}, "tool": "name", "text": "...", "usage": {...}}``
- ``{"kind": "tool_use", "calls": [{"tool": "show", "input": {...}}, ...]}``  (several calls)
- ``{"kind": "text", "text": "..."}``              (an answer without a tool call)
- ``{"kind": "error", "status": 429, "retry_after": "0"}``  (any 4xx/5xx)
- ``{"kind": "overloaded"}``                          (529 overloaded_error)
- ``{"kind": "truncated"}``                           (Content-Length longer than the body)
- ``{"kind": "malformed"}``                           (200 with a body that is not JSON)
- ``{"kind": "message", "body": {...}}``              (a full response verbatim)

Anthropic answers carry ``tool_use`` blocks; OpenAI answers ``tool_calls`` with the
input as a JSON ``arguments`` string. A tool call's id is derived from the request
body and its position, so the same request gets the same ids (a resent call, a
resumed conversation's transcript).

Hostile servers, for the tests of the client's limits (any answer kind takes these):

- ``"drip_s": s``: the whole response, status line and headers included, is sent
  one byte every ``s`` seconds;
- ``"gzip": true``: the body is gzip-compressed (``content-encoding: gzip``),
  asked for or not;
- ``"wire_usage": {...}``: the response's ``usage`` object verbatim, in the
  protocol's own field names (negative, huge or non-numeric counts);
- a call's ``"raw": "..."`` instead of ``"input"``: the tool input as this JSON text,
  verbatim (an OpenAI ``arguments`` string; inside an Anthropic body), so a script
  can send what Python's own encoder could not write (nesting 100,000 deep).

``match`` is ``{"contains": ["..."], "tool": "propose_edit", "not_contains": [...],
"model": "..."}`` against the request body's text (``tool``: a tool the request offers,
either protocol's shape; ``model``: the body's model, for an ensemble's members).
``"repeat": n`` reuses an exchange n times (``-1``: forever).
``"delay_s": s`` holds the first answer of that exchange for ``s`` seconds after
the request is recorded in ``received`` (a call in flight: what the
kill-and-resume tests interrupt; :meth:`ReplayServer.stop` cuts it short).

The models endpoints (what the pre-flight asks, never from the script): ``GET
/v1/models/{id}`` (both protocols) and ``GET /v1/models`` (the list). ``models=[...]``:
the only models served (another model's request, ``GET`` or ``POST``, is a 404, as a
real server's); None (the default): any model, the list naming ``model`` or ``replay``.
``models_api``: ``"both"`` (the default), ``"list"`` (vLLM, llama.cpp: no ``GET
/v1/models/{id}``) or ``"none"``. ``api_key="..."``: every request without that key
(``x-api-key`` or ``Authorization: Bearer``) gets a 401. ``GET`` requests are kept in
``model_requests`` (paths), not in ``received``.

A request carrying a call id (the client's ``x-asmevo-call-id`` header) that
was already given an answer (``tool_use``, ``text`` or ``message``) gets the
same exchange again, without using it up: the call was sent again (a run
resumed after a kill mid-call) and a deterministic provider answers it the
same way. Errors are not remembered: a retry after a 429 takes the next exchange.

Without a ``usage``, token counts are estimated (4 characters a token) and
prompt caching is simulated: the first request with a given cached prefix
(tools + system blocks up to the last ``cache_control``; for OpenAI requests,
tools + the system message, as those servers cache prefixes by themselves)
pays ``cache_creation_input_tokens`` (OpenAI: nothing extra), later ones read it
(``cache_read_input_tokens``, OpenAI ``prompt_tokens_details.cached_tokens``).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from asmevo.operators.llm.client import CALL_ID_HEADER

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 503: "api_error",
                529: "overloaded_error"}


def load_script(source: str | Path | list | dict) -> list[dict]:
    """Exchanges from a JSON file, a list, or ``{"exchanges": [...]}``."""
    if isinstance(source, (str, Path)):
        source = json.loads(Path(source).read_text())
    if isinstance(source, dict):
        source = source.get("exchanges", [])
    if not isinstance(source, list) or not all(isinstance(e, dict) for e in source):
        raise ValueError("a replay script is a list of exchange objects")
    return [dict(e) for e in source]


_ANSWERS = ("tool_use", "text", "message")


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _cached_prefix(body: dict) -> str:
    """Tools and system blocks up to (and including) the last one marked cache_control;
    for a chat-completions body, tools and the system message."""
    parts = [json.dumps(body.get("tools", []), sort_keys=True)]
    if "system" not in body:
        msgs = body.get("messages") or []
        if msgs and msgs[0].get("role") == "system":
            return "\n".join(parts + [str(msgs[0].get("content", ""))])
        return ""
    system = body.get("system") or []
    if isinstance(system, str):
        return ""
    last = max((i for i, b in enumerate(system) if b.get("cache_control")), default=-1)
    if last < 0:
        return ""
    parts += [b.get("text", "") for b in system[:last + 1]]
    return "\n".join(parts)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that hung up (what the limits' tests make it do) is not news."""
        import sys
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


@dataclass
class Received:
    """One request as the server saw it (the API key header is never kept)."""

    body: dict
    raw: str
    had_api_key: bool
    answered_with: str
    headers: dict = field(default_factory=dict)


class ReplayServer:
    """``with ReplayServer(script) as srv: Anthropic(base_url=srv.base_url, ...)``."""

    def __init__(self, script, *, model: str | None = None, models: list[str] | None = None,
                 models_api: str = "both", api_key: str | None = None):
        self.exchanges = load_script(script)
        self._uses = [0] * len(self.exchanges)
        self.model = model
        self.models = None if models is None else list(models)
        if models_api not in ("both", "list", "none"):
            raise ValueError(f"models_api is both, list or none, not {models_api!r}")
        self.models_api = models_api
        self._api_key = api_key
        self.model_requests: list[str] = []
        self.received: list[Received] = []
        self._seen_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._by_call: dict[str, int] = {}       # call id -> the answer exchange it got
        self._stopping = threading.Event()

    # -- lifecycle -------------------------------------------------------
    def start(self) -> "ReplayServer":
        handler = _make_handler(self)
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True, name="asmevo-llm-replay")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()               # a delayed answer stops waiting
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ReplayServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def unused(self) -> list[int]:
        """Indexes of exchanges never answered (a test can assert the script was used up)."""
        return [i for i, e in enumerate(self.exchanges)
                if self._uses[i] == 0 and e.get("repeat", 1) != -1]

    # -- who may ask, for what ---------------------------------------------
    def authorized(self, headers) -> bool:
        """Whether a request carries the key (always, without ``api_key``)."""
        if self._api_key is None:
            return True
        bearer = (headers.get("authorization") or "").removeprefix("Bearer ").strip()
        return self._api_key in (headers.get("x-api-key"), bearer)

    def serves(self, model) -> bool:
        return self.models is None or model in self.models

    def model_answer(self, path: str) -> tuple[int, dict | str]:
        """(status, body or the error's message) of a GET on the models endpoints."""
        listed = self.models if self.models is not None else [self.model or "replay"]
        if path in ("/v1/models", "/models") and self.models_api != "none":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "replay",
                     "type": "model", "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
                    for m in listed]
            return 200, {"object": "list", "data": data, "has_more": False,
                         "first_id": listed[0] if listed else None,
                         "last_id": listed[-1] if listed else None}
        for prefix in ("/v1/models/", "/models/"):
            if path.startswith(prefix) and self.models_api == "both":
                mid = urllib.parse.unquote(path[len(prefix):])
                if not self.serves(mid):
                    return 404, f"model: {mid}"
                return 200, {"type": "model", "id": mid, "object": "model", "created": 0,
                             "owned_by": "replay", "display_name": mid,
                             "created_at": "2026-01-01T00:00:00Z"}
        return 404, f"replay server: no {path}"

    # -- matching ----------------------------------------------------------
    def _matches(self, ex: dict, body: dict, raw: str) -> bool:
        m = ex.get("match") or {}
        tools = [t.get("name") or (t.get("function") or {}).get("name")
                 for t in body.get("tools", [])]
        if "tool" in m and m["tool"] not in tools:
            return False
        if "model" in m and body.get("model") != m["model"]:
            return False
        if any(s not in raw for s in m.get("contains", [])):
            return False
        if any(s in raw for s in m.get("not_contains", [])):
            return False
        return True

    def pick(self, body: dict, raw: str, call_id: str | None = None
             ) -> tuple[int, dict, bool] | None:
        """(index, exchange, first use of it), or None when nothing matches."""
        with self._lock:
            if call_id and call_id in self._by_call:
                i = self._by_call[call_id]
                return i, self.exchanges[i], False
            for i, ex in enumerate(self.exchanges):
                repeat = ex.get("repeat", 1)
                if repeat != -1 and self._uses[i] >= repeat:
                    continue
                if self._matches(ex, body, raw):
                    self._uses[i] += 1
                    if call_id and ex.get("kind", "tool_use") in _ANSWERS:
                        self._by_call[call_id] = i
                    return i, ex, self._uses[i] == 1
        return None

    def record(self, body: dict, raw: str, headers) -> tuple[int, dict, bool] | None:
        """:meth:`pick` for a request, recorded in ``received`` (its key headers left out)."""
        kept = {k.lower(): v for k, v in headers.items()
                if k.lower() not in ("x-api-key", "authorization")}
        picked = self.pick(body, raw, headers.get(CALL_ID_HEADER))
        answered = ("none" if picked is None
                    else f"{picked[0]}:{picked[1].get('kind', 'tool_use')}")
        keyed = bool(headers.get("x-api-key") or headers.get("authorization"))
        self.received.append(Received(body, raw, keyed, answered, kept))
        return picked

    def usage_for(self, body: dict, output_text: str) -> dict:
        """Estimated usage (Messages-API fields), with prompt caching simulated per
        distinct prefix."""
        prefix = _cached_prefix(body)
        everything = json.dumps(body.get("tools", []), sort_keys=True) + "\n".join(
            b.get("text", "") for b in (body.get("system") or []) if isinstance(b, dict)) + \
            json.dumps(body.get("messages", []))
        total = estimate_tokens(everything)
        cached = estimate_tokens(prefix) if prefix else 0
        key = hashlib.sha256(prefix.encode()).hexdigest()
        with self._lock:
            hit = key in self._seen_prefixes
            self._seen_prefixes.add(key)
        return {"input_tokens": max(1, total - cached),
                "output_tokens": estimate_tokens(output_text),
                "cache_creation_input_tokens": 0 if (hit or not cached) else cached,
                "cache_read_input_tokens": cached if hit else 0}

    def next_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"msg_replay_{self._counter:04d}"


def _calls(body: dict, ex: dict, raw: str) -> list[dict]:
    """The exchange's tool calls with ids derived from the request's content (same
    request, same ids, whatever order its keys were serialized in)."""
    if ex.get("kind", "tool_use") != "tool_use":
        return []
    first = next((t.get("name") or (t.get("function") or {}).get("name")
                  for t in body.get("tools", [])), "tool")
    calls = ex.get("calls") or [{"tool": ex.get("tool"), "input": ex.get("input", {}),
                                 **({"raw": ex["raw"]} if "raw" in ex else {})}]
    seed = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
    return [{"id": f"toolu_{seed}_{k}", "name": c.get("tool") or first,
             "input": _Raw(c["raw"]) if "raw" in c else c.get("input", {})}
            for k, c in enumerate(calls)]


class _Raw(str):
    """A tool input sent as this JSON text, verbatim (:func:`_dumps`)."""


def _dumps(value) -> str:
    """``json.dumps`` with every :class:`_Raw` written as its text, unquoted."""
    raws: list[str] = []

    def mark(v):
        if isinstance(v, _Raw):
            raws.append(str(v))
            return f"\0raw{len(raws) - 1}\0"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v

    text = json.dumps(mark(value))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\0raw{i}\0"), raw, 1)
    return text


def _message(srv: ReplayServer, body: dict, ex: dict, raw: str) -> dict:
    """A Messages-API response."""
    kind = ex.get("kind", "tool_use")
    content = []
    if ex.get("text"):
        content.append({"type": "text", "text": ex["text"]})
    content += [{"type": "tool_use", **c} for c in _calls(body, ex, raw)]
    out_text = _dumps(content)
    usage = dict(ex.get("usage") or srv.usage_for(body, out_text))
    for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
              "cache_read_input_tokens"):
        usage.setdefault(k, 0)
    usage = ex.get("wire_usage", usage)
    return {"id": srv.next_id(), "type": "message", "role": "assistant",
            "model": body.get("model", srv.model or "replay"), "content": content,
            "stop_reason": "tool_use" if kind == "tool_use" else "end_turn",
            "stop_sequence": None, "usage": usage}


def _completion(srv: ReplayServer, body: dict, ex: dict, raw: str) -> dict:
    """A chat-completions response: the same answer as :func:`_message`, OpenAI's shape."""
    calls = [{"id": c["id"], "type": "function",
              "function": {"name": c["name"], "arguments": str(c["input"]) if isinstance(
                  c["input"], _Raw) else json.dumps(c["input"])}}
             for c in _calls(body, ex, raw)]
    msg = {"role": "assistant", "content": ex.get("text") or None}
    if calls:
        msg["tool_calls"] = calls
    u = ex.get("usage") or srv.usage_for(body, json.dumps(msg))
    cached = int(u.get("cache_read_input_tokens", 0))
    prompt = int(u.get("input_tokens", 0)) + cached + int(u.get("cache_creation_input_tokens", 0))
    return {"id": "chatcmpl-" + srv.next_id()[len("msg_replay_"):], "object": "chat.completion",
            "created": 0, "model": body.get("model", srv.model or "replay"),
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": ex.get("wire_usage", {
                "prompt_tokens": prompt, "completion_tokens": int(u.get("output_tokens", 0)),
                "total_tokens": prompt + int(u.get("output_tokens", 0)),
                "prompt_tokens_details": {"cached_tokens": cached}})}


def _drip(wfile, stopping: threading.Event, status: int, payload: bytes, headers: dict,
          every: float) -> None:
    """The whole response one byte at a time, ``every`` seconds apart, until it is sent,
    the client hangs up or the server stops."""
    head = [f"HTTP/1.1 {status} OK", "content-type: application/json",
            f"content-length: {len(payload)}", "connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
    for i in range(len(data)):
        try:
            wfile.write(data[i:i + 1])
            wfile.flush()
        except OSError:
            return
        if stopping.wait(float(every)):
            return


class _Handler(BaseHTTPRequestHandler):
    """One request of a ReplayServer (``srv``: set by :func:`_make_handler`)."""

    protocol_version = "HTTP/1.1"
    srv: ReplayServer

    def log_message(self, *args):  # quiet: tests read srv.received instead
        pass

    def _send(self, status: int, payload: bytes, headers: dict | None = None,
              length: int | None = None, ex: dict | None = None) -> None:
        if ex and ex.get("gzip"):
            payload = gzip.compress(payload)
            headers = dict(headers or {}, **{"content-encoding": "gzip"})
        if ex and ex.get("drip_s"):
            self.close_connection = True
            _drip(self.wfile, self.srv._stopping, status, payload, headers or {}, ex["drip_s"])
            return
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", f"req_replay_{len(self.srv.received):04d}")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("content-length", str(len(payload) if length is None else length))
        if length is not None:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        if length is not None:
            self.close_connection = True

    def _error(self, status: int, message: str, headers: dict | None = None) -> None:
        err = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                          "message": message}}
        self._send(status, json.dumps(err).encode(), headers)

    def _refused(self, body, raw: str) -> bool:
        """A request without the key (401) or for a model not served (404), answered
        so, recorded in ``received`` and taking no exchange."""
        status, message = ((401, "invalid x-api-key") if not self.srv.authorized(self.headers)
                           else (404, f"model: {str(body.get('model'))[:80]}")
                           if isinstance(body, dict) and not self.srv.serves(body.get("model"))
                           else (0, ""))
        if status:
            keyed = bool(self.headers.get("x-api-key") or self.headers.get("authorization"))
            self.srv.received.append(Received(body, raw, keyed, f"refused:{status}"))
            self._error(status, message)
        return bool(status)

    def do_GET(self):  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        self.srv.model_requests.append(path)
        if not self.srv.authorized(self.headers):
            self._error(401, "invalid x-api-key")
            return
        status, body = self.srv.model_answer(path)
        if status != 200:
            self._error(status, body)
            return
        self._send(200, json.dumps(body).encode())

    def do_POST(self):  # noqa: N802 (http.server's naming)
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n).decode("utf-8", "replace")
        path = self.path.split("?")[0]
        if path not in ("/v1/messages", "/v1/chat/completions", "/chat/completions"):
            self._error(404, "replay server serves /v1/messages and /v1/chat/completions, "
                        f"not {self.path}")
            return
        answer = _message if path == "/v1/messages" else _completion
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._error(400, "request body is not JSON")
            return
        refused = self._refused(body, raw)
        if refused:
            return
        picked = self.srv.record(body, raw, self.headers)
        if picked is None:
            self._error(400, "replay: no recorded exchange matches this request")
            return
        _, ex, first = picked
        if first and ex.get("delay_s"):
            self.srv._stopping.wait(float(ex["delay_s"]))
            if self.srv._stopping.is_set():
                return
        kind = ex.get("kind", "tool_use")
        if kind in ("tool_use", "text"):
            self._send(200, _dumps(answer(self.srv, body, ex, raw)).encode(), ex=ex)
        elif kind == "message":
            self._send(200, json.dumps(ex["body"]).encode(), ex=ex)
        elif kind == "overloaded":
            self._error(529, ex.get("message", "Overloaded"))
        elif kind == "error":
            extra = {"retry-after": ex["retry_after"]} if "retry_after" in ex else None
            self._error(int(ex.get("status", 500)), ex.get("message", "replayed error"), extra)
        elif kind == "truncated":
            full = json.dumps(answer(self.srv, body, {"kind": "text", "text": "x" * 200,
                                                 "usage": {"input_tokens": 1}}, raw))
            self._send(200, full[:40].encode(), length=len(full))
        elif kind == "malformed":
            self._send(200, b'{"id": "msg_bad", "content": [ {"type": "tool_use", ')
        else:
            self._error(500, f"replay: unknown exchange kind {kind!r}")


def _make_handler(srv: ReplayServer) -> type:
    return type("Handler", (_Handler,), {"srv": srv})

def main(argv: list[str] | None = None) -> int:
    """Serve a script until interrupted; prints the base_url to put in ``[llm] base_url``."""
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Replay recorded LLM exchanges locally "
                                 "(Anthropic Messages and OpenAI chat completions).")
    ap.add_argument("script", help="JSON file of exchanges")
    args = ap.parse_args(argv)
    with ReplayServer(args.script) as srv:
        print(f'base_url = "{srv.base_url}"        # provider = "anthropic"', flush=True)
        print(f'base_url = "{srv.base_url}/v1"     # provider = "openai"', flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
