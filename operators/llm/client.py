"""One LLM call with retries, on the SDK of the config's wire protocol (``anthropic``,
``openai``: :mod:`asmevo.operators.llm.providers`).

The SDK's own retries are off (``max_retries=0``): ours are exponential,
jittered from a seed (the call id), so a test replays the same delays and a
resumed run the same schedule. 408/409/429/5xx/529, timeouts and dropped
connections are retried (a ``retry-after`` header lengthens the wait, never
beyond ``backoff_max_s``); anything else, or retries exhausted, comes back as a
failed :class:`Reply` with the reason, never an exception into the engine.

Requests are Messages-API bodies; the provider rewrites them for its wire
(:func:`wire_body`; ``provider = "openai"``: chat-completions bodies,
:mod:`asmevo.operators.llm.openai_wire`) and names the SDK call that sends them. Both SDKs
come from one generator and raise the same kinds of errors, so retries and reasons are
written once. Either way the answer comes back as an :class:`Answer`.

Every attempt is bounded as a whole, on the stream (:mod:`asmevo.operators.llm.guard`):
it ends ``timeout_s`` after it starts, or earlier where the call's
``call_timeout_s`` (every attempt and backoff wait) or the run's wall-clock budget
(the ``deadline`` the engine hands the operator) ends first; past one of the
last two nothing is retried. An answer is at most ``ASMEVO_LLM_MAX_ANSWER_BYTES``
and nested at most ``ASMEVO_MAX_JSON_DEPTH`` deep before anything parses it; its
usage counts are checked (:func:`asmevo.operators.llm.pricing.token_count`), and what is
kept of it is capped (:func:`asmevo.operators.llm.answer.capped`). An answer without a
tool call whose text holds one written as JSON (a local server without a tool
parser) gets it (:mod:`asmevo.operators.llm.textcalls`, before the cap). Each of these
says what it did in the Reply's ``notes`` or ``reason``.

A failure that says the setup cannot work (a refused key, a server that cannot be
reached, an unknown model: :data:`UNUSABLE`) is marked ``failure`` in its Reply: the
engine stops a run whose operator fails every proposal of a generation so, and the
pre-flight (:mod:`asmevo.operators.llm.preflight`) refuses to start one. Each retry is one
INFO line on the ``asmevo.llm`` logger (``asmevo -v`` shows it): the attempt, the
reason, the wait.

The API key is read from the environment variable ``api_key_env`` names
(``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` by default) and nowhere else. It
only ever goes into the SDK's request header; every reason this module writes
is scrubbed of it, and the client's repr does not show it. A server that needs
no key (``api_key_env = ""``) gets the placeholder ``no-key``: both SDKs
insist on sending one.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Callable

from asmevo import knobs
from asmevo.operators.llm import guard
from asmevo.operators.llm.answer import Answer, capped
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.pricing import Usage, getter
from asmevo.operators.llm.providers import PROVIDERS
from asmevo.operators.llm.textcalls import with_text_calls

log = logging.getLogger("asmevo.llm")

API_KEY_ENV = LLMConfig().api_key_env     # the default provider's variable
NO_KEY = "no-key"
# the call id on the wire (every attempt): lets a log or the replay server tell a call
# sent again after a resume from a new call; not part of the body (nor of the stored prompt)
CALL_ID_HEADER = "x-asmevo-call-id"
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RUN_DEADLINE = "the run's budget.wall_seconds"
# failures that say the setup cannot work, by kind: the key is refused (401, 403), the model
# or the path does not exist (404), the server cannot be reached (connection refused, no
# such host, no connection within timeout_s), or it refuses the request itself (another 4xx
# that is not retried): each proposal that meets one of them fails the same way
UNUSABLE = ("auth", "not_found", "connect", "refused")


@dataclass(frozen=True)
class Failure:
    """One failed attempt: whether it is retried, why, the server's ``retry-after``, and
    its kind when it says the setup cannot work (:data:`UNUSABLE`; "" otherwise)."""

    retry: bool
    reason: str
    after: float | None = None
    kind: str = ""


def _status_kind(status: int) -> str:
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    return "refused" if 400 <= status < 500 and status not in RETRYABLE_STATUS else ""


def api_key_from_env(config: LLMConfig | None = None) -> str | None:
    """The key from the variable ``config.api_key_env`` names (None: the server needs
    none); a clear error, naming the variable and never a value, when it is unset."""
    name = API_KEY_ENV if config is None else config.api_key_env
    if not name:
        return None
    key = os.environ.get(name, "").strip()
    if not key:
        raise LLMError(f"the LLM operators need an API key: set {name} in the environment")
    return key


def wire_body(config: LLMConfig, request: dict) -> dict:
    """What goes on the wire (and into the archive) for a Messages-shaped request."""
    return PROVIDERS[config.provider].body(request)


@dataclass(frozen=True)
class Reply:
    """What came back: the answer when ``ok``, else the reason it did not."""

    ok: bool
    answer: Answer | None
    usage: Usage
    http_attempts: int
    seconds: float
    reason: str = ""
    notes: tuple[str, ...] = ()      # usage counts charged at the limit, an answer cut
    failure: str = ""                # a kind of UNUSABLE: the setup cannot work

    @property
    def note(self) -> str:
        return "; ".join(self.notes)

    @property
    def unusable(self) -> bool:
        return self.failure in UNUSABLE


def backoff_delays(config: LLMConfig, seed: str) -> list[float]:
    """The wait before retry 1..max_retries: base * 2**k, capped, +-jitter, seeded."""
    rng = random.Random(seed)
    out = []
    for k in range(config.max_retries):
        d = min(config.backoff_max_s, config.backoff_base_s * (2 ** k))
        out.append(max(0.0, d * (1.0 + config.backoff_jitter * (2.0 * rng.random() - 1.0))))
    return out


class LLMClient:
    """A thin, retrying wrapper over the provider's SDK call."""

    def __init__(self, config: LLMConfig, *, api_key: str | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        import inspect

        self.config = config
        self._key = api_key if api_key is not None else api_key_from_env(config)
        self._sleep = sleep
        self._wire = PROVIDERS[config.provider]
        sdk = importlib.import_module(self._wire.sdk)
        self._sdk = self._wire.client(sdk, api_key=self._key or NO_KEY,
                                      base_url=config.base_url, max_retries=0,
                                      timeout=config.timeout_s,
                                      http_client=guard.http_client(sdk, config.timeout_s))
        self._create = self._wire.create(self._sdk)
        self._errors = sdk
        self._known = set(inspect.signature(self._create).parameters)

    def _kwargs(self, body: dict) -> dict:
        """SDK keyword arguments; body fields this SDK version has no argument for
        (``temperature`` in anthropic 2.x) travel in ``extra_body``, unchanged on the wire."""
        kw = {k: v for k, v in body.items() if k in self._known}
        extra = {k: v for k, v in body.items() if k not in self._known}
        if extra:
            kw["extra_body"] = extra
        return kw

    def __repr__(self) -> str:
        return (f"LLMClient(provider={self.config.provider!r}, model={self.config.model!r}, "
                f"base_url={self.config.base_url!r})")

    def scrub(self, text: str) -> str:
        """``text`` with the API key (if it somehow got there) replaced."""
        return text.replace(self._key, "[redacted]") if self._key else text

    def _classify(self, exc: Exception, watch: guard.Watch) -> Failure:
        """What one failed attempt means: retried or not, the reason, its kind."""
        a = self._errors
        if watch.tripped:          # a limit of ours: the deadline, the size, the nesting
            timed_out = watch.left() <= 0
            return Failure(timed_out and not watch.final, watch.tripped)
        cause = type(exc.__cause__).__name__ if exc.__cause__ else ""
        detail = (str(exc.__cause__ or "") or str(exc))[:200]    # the socket's own words
        if isinstance(exc, a.APITimeoutError):
            if cause == "ConnectTimeout" and not watch.final:   # its own limit, not the run's
                return Failure(True, f"no connection within timeout_s ({detail})",
                               kind="connect")
            return Failure(True, "timeout")
        if isinstance(exc, a.APIConnectionError):
            if cause == "ConnectError":          # refused, no such host, unreachable
                return Failure(True, f"cannot connect ({detail})", kind="connect")
            return Failure(True, f"connection error ({cause or 'dropped'}: {detail})")
        if isinstance(exc, a.APIStatusError):
            after = None
            raw = exc.response.headers.get("retry-after") if exc.response is not None else None
            if raw:
                try:
                    after = float(raw)
                except ValueError:
                    after = None
            kind = "overloaded" if exc.status_code == 529 else f"HTTP {exc.status_code}"
            return Failure(exc.status_code in RETRYABLE_STATUS,
                           f"{kind}: {_api_message(exc)}".strip(), after,
                           _status_kind(exc.status_code))
        if isinstance(exc, (json.JSONDecodeError, a.APIResponseValidationError)):
            return Failure(False, f"malformed response ({exc.__class__.__name__}: {exc})")
        return Failure(False, f"{exc.__class__.__name__}: {exc}")

    def where(self) -> str:
        """The model and the server, as a reason that says the setup cannot work names them."""
        return f"{self.config.model} at {self.config.base_url}"

    def _answer(self, msg) -> tuple[Answer, Usage]:
        return self._wire.answer(msg)

    def _watch(self, t0: float, deadline: float | None, deadline_name: str) -> guard.Watch:
        """The next attempt's limits: its own timeout_s, unless the call's or the run's
        end comes first."""
        now = time.monotonic()
        ends = [(now + self.config.timeout_s, f"timeout_s ({self.config.timeout_s:g} s)", False),
                (t0 + self.config.call_timeout_s,
                 f"the call's call_timeout_s ({self.config.call_timeout_s:g} s)", True)]
        if deadline is not None:
            ends.append((deadline, deadline_name, True))
        end, limit, final = min(ends, key=lambda e: e[0])
        return guard.Watch(end, limit, final, knobs.LLM_MAX_ANSWER_BYTES.value)

    def send(self, request: dict, *, seed: str, deadline: float | None = None,
             deadline_name: str = RUN_DEADLINE, retries: int | None = None) -> Reply:
        """Send ``request`` (a Messages-API body, translated for the provider) with
        retries, within the limits of the module docstring; never raises for API trouble.

        ``seed`` is the call id: it seeds the backoff jitter and travels in the
        ``x-asmevo-call-id`` header. ``deadline`` (``time.monotonic()``) is when the
        run's wall-clock budget ends (``deadline_name``: what a reason calls it);
        ``retries``: at most this many retries (fewer than ``max_retries``)."""
        body = self._kwargs(wire_body(self.config, request))
        delays = backoff_delays(self.config, seed)[:retries]
        t0 = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            watch = self._watch(t0, deadline, deadline_name)
            try:
                if watch.left() <= 0:
                    raise TimeoutError(watch.trip(f"{watch.limit} is spent"))
                with guard.watching(watch):
                    msg = self._create(**body, extra_headers={CALL_ID_HEADER: seed})
            except Exception as exc:  # noqa: BLE001 — classified below, never propagated
                f = self._classify(exc, watch)
                reason = self.scrub(f.reason)[:300]
                wait, stop = self._wait(delays, attempt, f.after, t0, deadline,
                                        deadline_name) if f.retry else (None, "")
                if wait is not None:
                    log.info("llm call %s: attempt %d of %d failed (%s); retrying in %.2f s",
                             seed[:12], attempt, len(delays) + 1, reason, wait)
                    self._sleep(wait)
                    continue
                what = (f"{stop} after {attempt} attempts: {reason}" if f.retry
                        else f"API call failed: {reason}")
                if f.kind in UNUSABLE:
                    what += f" ({self.scrub(self.where())})"
                # the proposal records it, and a setup that cannot work stops the run with
                # one line: a line per failed call only with -v
                log.info("llm call %s: %s", seed[:12], what)
                return Reply(False, None, Usage(), attempt, time.monotonic() - t0, what,
                             failure=f.kind)
            return self._reply(msg, attempt, t0, seed, request)

    def _wait(self, delays: list[float], attempt: int, after: float | None, t0: float,
              deadline: float | None, deadline_name: str = RUN_DEADLINE
              ) -> tuple[float | None, str]:
        """(the wait before the next attempt, "") or (None, why there is none: every
        retry used, or the wait would reach the call's or the run's end)."""
        if attempt > len(delays):
            return None, "retries exhausted"
        wait = delays[attempt - 1]
        if after is not None:
            wait = min(self.config.backoff_max_s, max(wait, after))
        if time.monotonic() + wait >= t0 + self.config.call_timeout_s:
            return None, "call_timeout_s reached"
        if deadline is not None and time.monotonic() + wait >= deadline:
            return None, f"{deadline_name} reached"
        return wait, ""

    def models(self, deadline: float | None, deadline_name: str) -> tuple[list[str] | None,
                                                                           Failure | None]:
        """The server's models endpoint, within the same limits as a call: (the ids it
        names, None) or (None, why not). ``GET /models/{model}`` (both APIs: the model, or
        a 404); for OpenAI-compatible servers without it (vLLM, llama.cpp) then
        ``GET /models``, the list. Free on both APIs: what the pre-flight asks first."""
        t0 = time.monotonic()
        got, failure = self._models_attempt(t0, deadline, deadline_name, listing=False)
        if got is not None or failure.kind == "connect" or not self._wire.lists_models:
            return got, failure
        return self._models_attempt(t0, deadline, deadline_name, listing=True)

    def _models_attempt(self, t0: float, deadline: float | None, deadline_name: str, *,
                        listing: bool) -> tuple[list[str] | None, Failure | None]:
        watch = self._watch(t0, deadline, deadline_name)
        try:
            with guard.watching(watch):
                if listing:
                    page = self._sdk.models.list()
                    return [str(getter(m)("id", "")) for m in page.data][:10_000], None
                got = self._sdk.models.retrieve(self.config.model)
                return [self.config.model, str(getter(got)("id", ""))], None
        except Exception as exc:  # noqa: BLE001 — classified, never propagated
            f = self._classify(exc, watch)
            return None, Failure(f.retry, self.scrub(f.reason)[:300], f.after, f.kind)

    def _reply(self, msg, attempt: int, t0: float, seed: str, request: dict) -> Reply:
        try:
            answer, usage = self._answer(msg)
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            what = self.scrub(f"malformed response ({exc.__class__.__name__}: {exc})")[:300]
            return Reply(False, None, Usage(), attempt, time.monotonic() - t0, what)
        read = ""
        if self.config.text_tool_calls:   # before the cap: what is used is what is kept
            answer, read = with_text_calls(answer, request)
        answer, cut = capped(answer, knobs.LLM_MAX_STORED_ANSWER_BYTES.value)
        notes = tuple(self.scrub(n)[:300] for n in (usage.note, read, cut) if n)
        for n in notes:
            log.warning("llm call %s: %s", seed[:12], n)
        log.info("llm call %s: ok after %d attempt(s); in %d out %d cache w %d r %d",
                 seed[:12], attempt, usage.input_tokens, usage.output_tokens,
                 usage.cache_creation_input_tokens, usage.cache_read_input_tokens)
        return Reply(True, answer, usage, attempt, time.monotonic() - t0, notes=notes)


def _api_message(exc) -> str:
    """The error's own message: the body's ``error.message`` (both SDKs), else its type."""
    get = getter(exc)       # both SDKs' APIStatusError; their attributes differ by version
    if get("api_message", None):
        return str(get("api_message"))
    body = get("body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(get("type", None) or "")
