"""Splitting an instruction's operand text where brackets do not nest: one home for all ISAs.

``v[4:5], s[0:3], 0 offen offset:16`` and ``R2, [R4.64+0x10], c[0x0][0x210]``
separate at commas and spaces, but never inside ``[...]`` or ``(...)``. The
emulator's decoder, the AMDGPU effects analysis and the NVIDIA SASS reader all
read operands this way; each keeps its own rule for what the pieces mean.
"""
from __future__ import annotations

from typing import Callable


def _split_top_level(text: str, is_sep: Callable[[str], bool]) -> list[str]:
    """``text`` cut at each character ``is_sep`` accepts outside brackets (never empty)."""
    pieces: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if depth == 0 and is_sep(ch):
            pieces.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    pieces.append("".join(cur))
    return pieces


def comma_fields(text: str) -> tuple[list[str], str]:
    """The stripped fields before ``text``'s last top-level comma, and the stripped rest
    after it (all of ``text`` without one; empty when nothing follows the comma)."""
    *head, tail = (p.strip() for p in _split_top_level(text, lambda ch: ch == ","))
    return head, tail


def top_level_words(text: str) -> list[str]:
    """The words of ``text`` split at whitespace outside brackets, empty ones dropped."""
    return [w for w in _split_top_level(text, str.isspace) if w]
