"""``[llm]``: the LLM operators' configuration, a frozen dataclass validated in one place.

Everything about a call that a user may want to change lives here; the API key
does not (it comes from the environment variable ``api_key_env`` names, so a
config file can be archived and shared). Unknown keys are an error naming the
key: a typo must not silently fall back to a default.

Two providers: ``"anthropic"`` (the Messages API, the default) and ``"openai"``
(any OpenAI-compatible chat-completions endpoint: OpenAI itself, or a local
vLLM / llama.cpp / Ollama / SGLang server). Where a request may go:

- ``https://`` anywhere;
- ``http://`` to this machine (``127.0.0.1``, ``localhost``, ``[::1]``): a local
  server, or the replay server;
- ``http://`` to a private-network address (10/8, 172.16/12, 192.168/16, fc00::/7,
  as an IP literal: a name could resolve anywhere), or to a host the user names in
  ``allow_http_hosts`` (``["vllm"]``: a container's or a LAN machine's name), only
  with ``api_key_env = ""``: a key never crosses a network in clear text, the
  prompts may (they hold the kernel's code, which the user chose to send to a
  server of their own);
- never a URL with credentials, a query or a fragment in it.

``api_key_env = ""`` means the server needs no key; it is allowed only where
plain http is (this machine, a private network, a named host: a public endpoint
needs one).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

from asmevo.files import read_toml
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.pricing import DEFAULT_PRICES, Price
from asmevo.operators.llm.providers import DEFAULT_PROVIDER, PROVIDERS
ENSEMBLES = ("weights", "bandit")
# keys a [[llm.models]] entry may not set: they belong to the operator, not to one model
_NOT_PER_MODEL = ("models", "ensemble", "prices")
DEFAULT_MODEL = "claude-sonnet-4-6"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")


def _host_kind(host: str, allowed: tuple[str, ...] = ()) -> str:
    """"loopback", "private" (an RFC 1918 / ULA IP literal), "named" (a host the user
    allowed plain http to, ``allow_http_hosts``) or "public"."""
    if host in _LOOPBACK:
        return "loopback"
    if host.rstrip(".") in allowed:
        return "named"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return "public"
    if ip.is_loopback:
        return "loopback"
    return "private" if ip.is_private and not ip.is_link_local else "public"


def check_http_hosts(hosts) -> tuple[str, ...]:
    """``allow_http_hosts``: host names or IP literals, exactly (no scheme, port, path or
    wildcard: the user names each machine that may get plain http), lower-cased."""
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise LLMError("[llm] allow_http_hosts must be a list of host names "
                       "(allow_http_hosts = [\"vllm\"])")
    out = []
    for h in hosts:
        name = h.strip().lower().rstrip(".") if isinstance(h, str) else None
        try:
            ok = name is not None and (bool(_HOST_NAME.fullmatch(name))
                                       or bool(ipaddress.ip_address(name.strip("[]"))))
        except ValueError:
            ok = False
        if not ok or len(name) > 253:
            raise LLMError(f"[llm] allow_http_hosts: {str(h)[:80]!r} is not a host name or "
                           "an IP address (one machine each: no scheme, port or wildcard)")
        out.append(name.strip("[]"))
    return tuple(out)


def check_base_url(url: str, keyed: bool, allowed: tuple[str, ...] = ()) -> None:
    """Refuse a base_url a request must not go to (module docstring); ``allowed``: the
    hosts ``allow_http_hosts`` names."""
    if not isinstance(url, str) or not url:
        raise LLMError("[llm] base_url must be a URL")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port                               # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise LLMError(f"[llm] base_url {url!r} is not a valid URL ({exc})") from None
    if parts.username or parts.password:
        raise LLMError("[llm] base_url must not hold credentials (the key comes from the "
                       "environment variable api_key_env names)")
    if parts.query or parts.fragment or not host:
        raise LLMError(f"[llm] base_url must be scheme://host[:port][/path], not {url!r}")
    if parts.scheme == "https":
        return
    kind = _host_kind(host, allowed)
    if parts.scheme != "http" or kind == "public":
        hint = (f"; to use plain http to your own server {host!r}, name it in "
                f"allow_http_hosts = [\"{host}\"] (with api_key_env = \"\")"
                if parts.scheme == "http" else "")
        raise LLMError(f"[llm] base_url must be https:// (or http:// to this machine or, "
                       f"without a key, to a private-network address), not {url!r}{hint}")
    if kind in ("private", "named") and keyed:
        raise LLMError(f"[llm] base_url {url!r} is plain http to another machine: a key "
                       "would cross the network in clear text; use https, or "
                       "api_key_env = \"\" for a server that needs no key")


@dataclass(frozen=True)
class Member:
    """One model of an ensemble: its whole configuration (the ``[llm]`` settings with the
    entry's own on top) and its weight."""

    config: "LLMConfig"
    weight: float = 1.0


@dataclass(frozen=True)
class LLMConfig:
    provider: str = DEFAULT_PROVIDER    # a wire protocol: asmevo.operators.llm.providers.PROVIDERS
    model: str = DEFAULT_MODEL
    max_tokens: int = 2048
    temperature: float | None = None    # None: the model's default (not sent)
    timeout_s: float = 120.0            # one HTTP attempt, whole: connect, send, answer
    call_timeout_s: float = 600.0       # one call: every attempt and backoff wait
    max_retries: int = 4                # after the first attempt; 429/5xx/529/timeouts
    backoff_base_s: float = 1.0         # delay before retry k: base * 2**k, capped, jittered
    backoff_max_s: float = 60.0
    backoff_jitter: float = 0.5         # +- fraction of the delay, seeded by the call id
    base_url: str | None = None         # None: the provider's public endpoint
    api_key_env: str | None = None      # None: ANTHROPIC_API_KEY / OPENAI_API_KEY; "": no key
    allow_http_hosts: tuple[str, ...] = ()   # host names plain http may go to (no key)
    prompt_cache: bool = True           # cache_control on the static prompt parts
    max_window_lines: int = 96          # longest window sent to the model
    context_lines: int = 8              # read-only lines shown before/after the window
    max_replacement_lines: int = 192
    max_replacement_chars: int = 12000
    notebook_entries: int = 8           # recent attempts quoted in a prompt
    max_listing_lines: int = 600        # K0 listing in the (cached) kernel block
    # llm_agent: one conversation per proposal, bounded by all of these
    max_turns: int = 8                  # model calls in one conversation
    max_tries: int = 4                  # try_edit evaluations in one conversation
    max_conversation_tokens: int = 300_000   # input + cache + output, over its turns
    max_conversation_dollars: float = 0.5
    max_tool_calls: int = 6             # tool calls answered in one turn (more: ignored)
    max_show_lines: int = 120           # lines one show() returns
    lineage_entries: int = 12           # earlier tries on the lineage quoted in a prompt
    force_tools: bool = True            # tool_choice "any" / "required" (false: "auto")
    # the run's accepted improvements quoted in a prompt (every island; [run] knowledge)
    inspirations: int = 3               # the best by gain
    diverse_inspirations: int = 2       # others: other islands and runs, unlike those
    inspiration_lines: int = 16         # lines shown of one window, before and after
    text_tool_calls: bool = True        # read tool calls written as JSON in an answer's text
    prompt_mutation: float = 0.0        # chance a proposal mutates its parent's prompt variant
    ensemble: str = "weights"           # how a proposal picks among models: weights | bandit
    models: tuple[Member, ...] = ()     # the ensemble ([[llm.models]]); () : this config alone
    prices: tuple[tuple[str, Price], ...] = field(
        default_factory=lambda: tuple(sorted(DEFAULT_PRICES.items())))

    def __post_init__(self):
        if not isinstance(self.prices, tuple):
            object.__setattr__(self, "prices", tuple(sorted(dict(self.prices).items())))
        if self.provider not in PROVIDERS:
            raise LLMError(f"[llm] provider must be one of {', '.join(PROVIDERS)}, "
                           f"not {self.provider!r}")
        if not self.model or not isinstance(self.model, str):
            raise LLMError("[llm] model must be a model name")
        wire = PROVIDERS[self.provider]
        if wire.needs_model and self.model == DEFAULT_MODEL:
            raise LLMError(f"[llm] provider \"{self.provider}\" needs a model name (the one "
                           "the server serves, e.g. model = \"Qwen/Qwen2.5-Coder-32B-Instruct\")")
        if self.base_url is None:
            object.__setattr__(self, "base_url", wire.default_url)
        if self.api_key_env is None:
            object.__setattr__(self, "api_key_env", wire.default_key_env)
        if not isinstance(self.api_key_env, str) or not (
                self.api_key_env == "" or self.api_key_env.replace("_", "").isalnum()):
            raise LLMError(f"[llm] api_key_env must name an environment variable "
                           f"(letters, digits, _) or be \"\", not {self.api_key_env!r}")
        object.__setattr__(self, "allow_http_hosts", check_http_hosts(self.allow_http_hosts))
        check_base_url(self.base_url, keyed=bool(self.api_key_env),
                       allowed=self.allow_http_hosts)
        if not self.api_key_env and _host_kind(urlsplit(self.base_url).hostname or "",
                                               self.allow_http_hosts) == "public":
            raise LLMError("[llm] api_key_env = \"\" (no key) is only for a server on this "
                           "machine, a private network or a host allow_http_hosts names, "
                           "not " + repr(self.base_url))
        for k in ("max_tokens", "max_window_lines", "max_replacement_lines",
                  "max_replacement_chars", "notebook_entries", "max_listing_lines",
                  "max_turns", "max_conversation_tokens", "max_tool_calls", "max_show_lines"):
            if not isinstance(v := vars(self)[k], int) or v < 1:
                raise LLMError(f"[llm] {k} must be a positive integer, not {v!r}")
        self._check_ensemble()
        for k in ("max_retries", "context_lines", "max_tries", "lineage_entries",
                  "inspirations", "diverse_inspirations", "inspiration_lines"):
            if not isinstance(v := vars(self)[k], int) or v < 0:
                raise LLMError(f"[llm] {k} must be a non-negative integer")
        if not isinstance(self.max_conversation_dollars, (int, float)) \
                or self.max_conversation_dollars < 0:
            raise LLMError("[llm] max_conversation_dollars must be a non-negative number")
        for k in ("prompt_cache", "force_tools", "text_tool_calls"):
            if not isinstance(vars(self)[k], bool):
                raise LLMError(f"[llm] {k} must be true or false")
        if self.temperature is not None and not 0.0 <= self.temperature <= 1.0:
            raise LLMError(f"[llm] temperature must be in [0, 1], not {self.temperature}")
        for k in ("timeout_s", "call_timeout_s"):
            v = vars(self)[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e7:
                raise LLMError(f"[llm] {k} must be a positive number of seconds, not {v!r}")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise LLMError("[llm] backoff delays must be non-negative")
        if not 0.0 <= self.backoff_jitter <= 1.0:
            raise LLMError("[llm] backoff_jitter must be in [0, 1]")
        if self.model not in dict(self.prices):
            raise LLMError(f"[llm] no price for model {self.model!r}: add "
                           f"[llm.prices.\"{self.model}\"] input = ..., output = ... ($/Mtok; "
                           "0 and 0 for a model served locally)")

    def _check_ensemble(self) -> None:
        if self.ensemble not in ENSEMBLES:
            raise LLMError(f"[llm] ensemble must be one of {', '.join(ENSEMBLES)}, "
                           f"not {self.ensemble!r}")
        p = self.prompt_mutation
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise LLMError(f"[llm] prompt_mutation must be a probability in [0, 1], not {p!r}")
        if not isinstance(self.models, tuple) or not all(isinstance(m, Member)
                                                         for m in self.models):
            raise LLMError("[llm] models must be a list of tables ([[llm.models]])")
        names = [m.config.model for m in self.models]
        if len(set(names)) != len(names):
            raise LLMError(f"[llm.models]: a model is named twice ({names}); one entry each")
        if self.models and not any(m.weight > 0 for m in self.models):
            raise LLMError("[llm.models]: every weight is 0")

    @property
    def price(self) -> Price:
        return dict(self.prices)[self.model]

    @property
    def members(self) -> tuple[Member, ...]:
        """The models a proposal chooses from: the ensemble, or this config alone."""
        return self.models or (Member(self, 1.0),)

    @staticmethod
    def from_table(table: dict) -> "LLMConfig":
        """From the parsed ``[llm]`` table; unknown keys raise naming the key."""
        if not isinstance(table, dict):
            raise LLMError("[llm] must be a table")
        known = {f.name for f in fields(LLMConfig)}
        for k in table:
            if k not in known:
                raise LLMError(f"[llm]: unknown key {k!r}")
        kw = dict(table)
        if "prices" in kw:
            raw = kw["prices"]
            if not isinstance(raw, dict):
                raise LLMError("[llm.prices] must be a table of models")
            merged = dict(DEFAULT_PRICES)
            merged.update({m: Price.from_table(m, t) for m, t in raw.items()})
            kw["prices"] = tuple(sorted(merged.items()))
        _floats(kw)
        if "models" in kw:
            # the operator's own settings are its first model's (where one model is asked
            # outside a proposal: the kernel block, a report)
            kw["models"] = _members(kw, kw["models"])
            first = kw["models"][0].config
            kw |= {f.name: vars(first)[f.name] for f in fields(LLMConfig)
                   if f.name not in _NOT_PER_MODEL}
        try:
            return LLMConfig(**kw)
        except TypeError as exc:   # a wrong type the checks above did not name
            raise LLMError(f"[llm]: {exc}") from exc

    @staticmethod
    def from_toml(path: str | Path) -> "LLMConfig":
        """The ``[llm]`` table of a run config (defaults when the file has none)."""
        data = read_toml(path, error=LLMError, what="config")
        return LLMConfig.from_table(data.get("llm", {}))


_FLOATS = ("temperature", "timeout_s", "call_timeout_s", "backoff_base_s", "backoff_max_s",
           "backoff_jitter", "max_conversation_dollars", "prompt_mutation")


def _floats(kw: dict) -> None:
    """TOML integers where a number of seconds, dollars or a probability is meant."""
    for k in _FLOATS:
        if k in kw and isinstance(kw[k], int) and not isinstance(kw[k], bool):
            kw[k] = float(kw[k])


def _members(base: dict, raw) -> tuple[Member, ...]:
    """``[[llm.models]]``: each entry the shared settings with its own on top (``model``
    required, ``weight`` 1 unless given); an entry may not set models, ensemble or prices
    (prices are shared: one table for every model)."""
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise LLMError("[llm] models must be a non-empty list of tables ([[llm.models]])")
    shared = {k: v for k, v in base.items() if k not in _NOT_PER_MODEL + ("model",)}
    known = {f.name for f in fields(LLMConfig)} | {"weight"}
    out = []
    for k, entry in enumerate(raw):
        bad = sorted(set(entry) - known) + sorted(set(entry) & set(_NOT_PER_MODEL))
        if bad:
            raise LLMError(f"[llm.models] entry {k}: unknown or shared-only key {bad[0]!r}")
        if "model" not in entry:
            raise LLMError(f"[llm.models] entry {k}: missing 'model'")
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise LLMError(f"[llm.models] entry {k}: weight must be a non-negative number")
        table = shared | {x: v for x, v in entry.items() if x != "weight"}
        _floats(table)
        if "prices" in base:
            table["prices"] = base["prices"]
        try:
            out.append(Member(LLMConfig(**table), float(weight)))
        except TypeError as exc:
            raise LLMError(f"[llm.models] entry {k}: {exc}") from exc
    return tuple(out)
