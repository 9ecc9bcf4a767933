"""Edits: the small, printable, replayable unit every operator produces.

An edit replaces one window of one function with new instruction lines. An
individual is K0 plus an ordered tuple of edits, so any candidate can be
rebuilt from the archive alone: ``apply_edits(recover(K0), edits)``. Windows
index the *current* program (after the earlier edits), which is what replay
reproduces exactly.

Structural edits (an unrolled loop, a remainder path, a pipelined prologue) need
new branch targets, so an edit line may also be a *generated label*: exactly
``.Lae_<1-16 lowercase hex digits>:`` (:data:`GENERATED_LABEL`). Nothing else
that looks like a label or a directive passes the sanitizer, K0's own names never
take this form (recovery prints K0's ``.L`` names under placeholders and invents
only ``.LBB_`` ones), and applying an edit refuses a generated name the program
already has. Label lines are not instructions: windows count instructions only
(:func:`instruction_count`).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

from asmevo import jsontext
from asmevo.errors import AsmevoError
from asmevo.jsontext import short


class EditFormatError(AsmevoError):
    """A serialized edit that cannot be read back."""


# the one grammar of labels an edit may define (assembler-local: no symbol is added)
GENERATED_LABEL = re.compile(r"\.Lae_[0-9a-f]{1,16}\Z", re.ASCII)


def label_of(line: str) -> str | None:
    """The generated label ``line`` defines (``.Lae_1f:`` -> ``.Lae_1f``), else None."""
    text = line.strip() if isinstance(line, str) else ""
    if not text.endswith(":"):
        return None
    name = text[:-1]
    return name if GENERATED_LABEL.match(name) else None


def instruction_count(lines) -> int:
    """How many of ``lines`` are instructions (generated label lines are not)."""
    return sum(1 for t in lines if label_of(t) is None)


@dataclass(frozen=True)
class Edit:
    """Replace instructions ``[start, end)`` of ``function`` with ``lines``.

    ``operator`` and ``note`` say who proposed it and why (a one-line rationale);
    they do not change what the edit does, so they are not part of its key.
    """

    function: str
    start: int
    end: int
    lines: tuple[str, ...]
    operator: str = ""
    note: str = ""
    # optional replacement of descriptor register granules (occupancy operator)
    descriptor: tuple[tuple[str, int], ...] = field(default=())

    def __post_init__(self):
        if not isinstance(self.lines, tuple):
            object.__setattr__(self, "lines", tuple(self.lines))
        if not isinstance(self.descriptor, tuple):
            object.__setattr__(self, "descriptor", tuple(sorted(dict(self.descriptor).items())))
        if self.start < 0 or self.end < self.start:
            raise EditFormatError(f"bad window [{self.start}, {self.end})")

    @property
    def key(self) -> str:
        """Content hash of what the edit does (not who proposed it)."""
        body = json.dumps([self.function, self.start, self.end, list(self.lines),
                           list(self.descriptor)], separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        d = asdict(self)
        d["lines"] = list(self.lines)
        d["descriptor"] = [list(x) for x in self.descriptor]
        return d

    @staticmethod
    def from_json(d: dict) -> "Edit":
        """From :meth:`to_json` (an archived edit, or one a user wrote): every field of
        its type and, for numbers, its range; anything else an EditFormatError."""
        if not isinstance(d, dict):
            raise EditFormatError(f"an edit is an object, not {short(d)}")
        try:
            return Edit(function=_field(d, "function", str), start=_index(d, "start"),
                        end=_index(d, "end"), lines=tuple(_strings(d, "lines")),
                        operator=_field(d, "operator", str, ""), note=_field(d, "note", str, ""),
                        descriptor=_descriptor(d.get("descriptor", [])))
        except KeyError as exc:
            raise EditFormatError(f"edit has no {exc.args[0]!r}") from None

    def __str__(self) -> str:
        head = f"{self.function}[{self.start}:{self.end}] -> {len(self.lines)} lines"
        who = f" ({self.operator}{': ' + self.note if self.note else ''})" if self.operator else ""
        return head + who


def edits_to_json(edits: tuple[Edit, ...]) -> str:
    return json.dumps([e.to_json() for e in edits], separators=(",", ":"))


def edits_from_json(text: str) -> tuple[Edit, ...]:
    """An edit list from JSON text, nesting and numbers bounded (:mod:`asmevo.jsontext`)."""
    try:
        raw = jsontext.loads(text, "edit list")
    except jsontext.JsonError as exc:
        raise EditFormatError(exc.message) from None
    if not isinstance(raw, list):
        raise EditFormatError("edit list is not a list")
    out = []
    for i, d in enumerate(raw):
        try:
            out.append(Edit.from_json(d))
        except EditFormatError as exc:
            raise EditFormatError(f"edit {i}: {exc.message}") from None
    return tuple(out)


MAX_INDEX = (1 << 31) - 1          # an instruction index, a window bound
MAX_DESCRIPTOR_VALUE = (1 << 32) - 1


def _field(d: dict, key: str, kind: type, default=None):
    v = d[key] if default is None else d.get(key, default)
    if not isinstance(v, kind):
        raise EditFormatError(f"{key} must be a {kind.__name__}, not {short(v)}")
    return v


def _integer(v, key: str, top: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
        raise EditFormatError(f"{key} must be an integer in [0, {top:,}], not {short(v)}")
    return v


def _index(d: dict, key: str) -> int:
    return _integer(d[key], key, MAX_INDEX)


def _strings(d: dict, key: str) -> list[str]:
    v = _field(d, key, list)
    bad = next((x for x in v if not isinstance(x, str)), None)
    if bad is not None:
        raise EditFormatError(f"{key} must hold strings only, not {short(bad)}")
    return v


def _descriptor(v) -> tuple[tuple[str, int], ...]:
    if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
        raise EditFormatError(f"descriptor must be a list of [field, value] pairs, not {short(v)}")
    return tuple((_field({"field": k}, "field", str),
                  _integer(x, f"descriptor {short(k)}", MAX_DESCRIPTOR_VALUE)) for k, x in v)


def as_edits(proposal) -> tuple[Edit, ...]:
    """An operator's proposal as the edits it appends to its parent's history.

    A proposal is one :class:`Edit`, or a non-empty tuple of Edits applied
    together in order (each indexing the program after the earlier ones): a
    structural change that touches several windows at once (code hoisted out
    of a loop leaves the body and lands before the loop's label) and is sound
    only as a whole. Anything else is a TypeError naming what it was.
    """
    if isinstance(proposal, Edit):
        return (proposal,)
    if isinstance(proposal, tuple) and proposal and all(isinstance(e, Edit) for e in proposal):
        return proposal
    raise TypeError(f"{type(proposal).__name__} is not an Edit or a non-empty tuple of Edits")
