"""JSON text from outside (an edit list, an LLM's tool arguments), parsed within limits.

Python's parser recurses once per level, so ``[[[[...`` 100,000 deep ends in a
RecursionError deep inside it (and a slightly shallower document in one inside
whatever walks the result); it turns a 5,000-digit integer into a ValueError of
its own and accepts ``NaN``, ``Infinity`` and ``1e999``. :func:`loads` measures
the nesting on the text first (:func:`nesting`, no recursion), against
``ASMEVO_MAX_JSON_DEPTH``, then parses with integers bounded to 64 bits and
non-finite numbers refused: one :class:`JsonError` that says which, never
another exception.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from asmevo import knobs
from asmevo.errors import AsmevoError

MAX_INT_DIGITS = 20            # 2**64 has 20 digits: every integer this project reads fits
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


class JsonError(AsmevoError):
    """JSON text that is malformed or past a limit, with the reason."""


def nesting(text: str | bytes) -> int:
    """How deeply arrays and objects nest in ``text`` (brackets inside strings aside),
    counted without parsing or recursing."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"[" not in data and b"{" not in data:
        return 0
    return bracket_depth(_STRING.sub(b"", data))


def bracket_depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``data``, every bracket counted (in numpy:
    a document of a million brackets is measured in milliseconds)."""
    import numpy as np

    signs = data.translate(None, _NOT_BRACKETS).translate(_SIGNS)
    if not signs:
        return 0
    return max(0, int(np.frombuffer(signs, np.int8).cumsum(dtype=np.int64).max()))


def check_nesting(text: str | bytes, what: str = "JSON") -> None:
    """JsonError when ``text`` nests deeper than ``ASMEVO_MAX_JSON_DEPTH``."""
    refusal = knobs.MAX_JSON_DEPTH.exceeded(nesting(text), f"{what} nesting")
    if refusal:
        raise JsonError(refusal)


def _int(s: str) -> int:
    digits = len(s.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise JsonError(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise JsonError(f"number {s[:40]} is out of range")
    return v


def _constant(s: str) -> Any:
    raise JsonError(f"{s} is not a JSON number")


def loads(text: str | bytes, what: str = "JSON") -> Any:
    """``json.loads`` within the limits of the module docstring."""
    check_nesting(text, what)
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except JsonError as exc:
        raise JsonError(f"{what}: {exc.message}") from None
    except json.JSONDecodeError as exc:
        raise JsonError(f"{what} is not JSON ({exc})") from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise JsonError(f"{what} is not JSON ({type(exc).__name__})") from None


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a one-line message."""
    if isinstance(value, (dict, list)):
        text = f"{type(value).__name__} of {len(value)}"
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        text = f"an integer of {value.bit_length():,} bits"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
