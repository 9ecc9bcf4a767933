"""Token prices and the cost of one call.

Prices are US dollars per million tokens, per model, for the four kinds of
tokens the Messages API reports: fresh input, output, cache writes (the first
call that stores a prefix) and cache reads. The defaults are the published
list prices when this was written; ``[llm.prices.MODEL]`` in the config
overrides them (check the provider's pricing page before trusting a figure).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo import knobs
from asmevo.jsontext import short

from asmevo.operators.llm.errors import LLMError


@dataclass(frozen=True)
class Price:
    """$ per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def __post_init__(self):
        for k in ("input", "output", "cache_write", "cache_read"):
            v = vars(self)[k]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise LLMError(f"price {k} must be a non-negative number, not {v!r}")

    @staticmethod
    def from_table(model: str, table: dict) -> "Price":
        if not isinstance(table, dict):
            raise LLMError(f"[llm.prices.{model}] must be a table")
        unknown = sorted(set(table) - {"input", "output", "cache_write", "cache_read"})
        if unknown:
            raise LLMError(f"[llm.prices.{model}]: unknown key {unknown[0]!r} "
                           "(expected input, output, cache_write, cache_read)")
        missing = [k for k in ("input", "output") if k not in table]
        if missing:
            raise LLMError(f"[llm.prices.{model}]: missing {missing[0]!r}")
        inp = float(table["input"])
        # the provider's rule when a table gives only input/output: writes 1.25x, reads 0.1x
        return Price(inp, float(table["output"]), float(table.get("cache_write", inp * 1.25)),
                     float(table.get("cache_read", inp * 0.1)))


DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": Price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-0": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
}


@dataclass(frozen=True)
class Usage:
    """Token counts of one response (``input_tokens`` excludes cached tokens).

    ``note`` names the counts the server gave that were not token counts (negative,
    huge, not numbers): each is charged at ``ASMEVO_LLM_MAX_USAGE_TOKENS`` instead
    (:func:`token_count`), so a lying server spends the budget, never refills it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    note: str = field(default="", compare=False)

    @staticmethod
    def from_response(usage) -> "Usage":
        """From the SDK's ``Usage`` object or a plain dict; absent fields count as 0."""
        get = getter(usage)
        counts, notes = zip(*(token_count(get(k, None), k) for k in (
            "input_tokens", "output_tokens", "cache_creation_input_tokens",
            "cache_read_input_tokens")))
        return Usage(*counts, note="; ".join(n for n in notes if n))

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens,
                     self.cache_creation_input_tokens + other.cache_creation_input_tokens,
                     self.cache_read_input_tokens + other.cache_read_input_tokens)


def getter(obj):
    """``get(key, default)`` over a dict or an object's attributes (an SDK model)."""
    if isinstance(obj, dict):
        return obj.get
    return lambda k, d=None: getattr(obj, k, d)


def token_count(value, name: str) -> tuple[int, str]:
    """(tokens, "") for a count in [0, ``ASMEVO_LLM_MAX_USAGE_TOKENS``] (absent: 0);
    anything else is charged at that limit, and the second item says so."""
    limit = knobs.LLM_MAX_USAGE_TOKENS
    top = limit.value
    if value is None:
        return 0, ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top:
        return value, ""
    return top, (f"usage {name} = {short(value, 40)} is not a token count in [0, {top:,}]: "
                 f"charged as {top:,} ({limit.env})")


def cost(usage: Usage, price: Price) -> float:
    """Dollars for one response's usage at ``price``."""
    return (usage.input_tokens * price.input + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * price.cache_write
            + usage.cache_read_input_tokens * price.cache_read) / 1e6
