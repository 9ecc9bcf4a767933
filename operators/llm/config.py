"""``[llm]``: the LLM operators' configuration, a frozen dataclass validated in one place.

Everything about a call that a user may want to change lives here; the API key
does not (it comes from ``ANTHROPIC_API_KEY`` only, so a config file can be
archived and shared). Unknown keys are an error naming the key: a typo must
not silently fall back to a default.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from asmevo.files import read_input_text
from operators.llm.errors import LLMError
from operators.llm.pricing import DEFAULT_PRICES, Price


@dataclass(frozen=True)
class LLMConfig:
    model: str = "claude-sonnet-4-6"
    max_tokens: int = 2048
    temperature: float | None = None    # None: the model's default (not sent)
    timeout_s: float = 120.0            # one HTTP request
    max_retries: int = 4                # after the first attempt; 429/5xx/529/timeouts
    backoff_base_s: float = 1.0         # delay before retry k: base * 2**k, capped, jittered
    backoff_max_s: float = 60.0
    backoff_jitter: float = 0.5         # +- fraction of the delay, seeded by the call id
    base_url: str = "https://api.anthropic.com"
    prompt_cache: bool = True           # cache_control on the static prompt parts
    max_window_lines: int = 96          # longest window sent to the model
    context_lines: int = 8              # read-only lines shown before/after the window
    max_replacement_lines: int = 192
    max_replacement_chars: int = 12000
    notebook_entries: int = 8           # recent attempts quoted in a prompt
    max_listing_lines: int = 600        # K0 listing in the (cached) kernel block
    prices: tuple[tuple[str, Price], ...] = field(
        default_factory=lambda: tuple(sorted(DEFAULT_PRICES.items())))

    def __post_init__(self):
        if not isinstance(self.prices, tuple):
            object.__setattr__(self, "prices", tuple(sorted(dict(self.prices).items())))
        if not self.model or not isinstance(self.model, str):
            raise LLMError("[llm] model must be a model name")
        for k in ("max_tokens", "max_window_lines", "max_replacement_lines",
                  "max_replacement_chars", "notebook_entries", "max_listing_lines"):
            if not isinstance(getattr(self, k), int) or getattr(self, k) < 1:
                raise LLMError(f"[llm] {k} must be a positive integer, not {getattr(self, k)!r}")
        for k in ("max_retries", "context_lines"):
            if not isinstance(getattr(self, k), int) or getattr(self, k) < 0:
                raise LLMError(f"[llm] {k} must be a non-negative integer")
        if self.temperature is not None and not 0.0 <= self.temperature <= 1.0:
            raise LLMError(f"[llm] temperature must be in [0, 1], not {self.temperature}")
        if self.timeout_s <= 0 or self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise LLMError("[llm] timeout_s must be positive and backoff delays non-negative")
        if not 0.0 <= self.backoff_jitter <= 1.0:
            raise LLMError("[llm] backoff_jitter must be in [0, 1]")
        if not self.base_url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
            raise LLMError(f"[llm] base_url must be https:// (or a local replay server), "
                           f"not {self.base_url!r}")
        if self.model not in dict(self.prices):
            raise LLMError(f"[llm] no price for model {self.model!r}: add "
                           f"[llm.prices.{self.model}] input = ..., output = ... ($/Mtok)")

    @property
    def price(self) -> Price:
        return dict(self.prices)[self.model]

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
        for k in ("temperature", "timeout_s", "backoff_base_s", "backoff_max_s",
                  "backoff_jitter"):
            if k in kw and isinstance(kw[k], int) and not isinstance(kw[k], bool):
                kw[k] = float(kw[k])
        try:
            return LLMConfig(**kw)
        except TypeError as exc:   # a wrong type the checks above did not name
            raise LLMError(f"[llm]: {exc}") from exc

    @staticmethod
    def from_toml(path: str | Path) -> "LLMConfig":
        """The ``[llm]`` table of a run config (defaults when the file has none)."""
        p = Path(path)
        try:
            data = tomllib.loads(read_input_text(p, error=LLMError, what="config"))
        except tomllib.TOMLDecodeError as exc:
            raise LLMError(f"not valid TOML: {exc}", path=str(p)) from None
        return LLMConfig.from_table(data.get("llm", {}))
