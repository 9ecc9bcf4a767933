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

from asmevo.errors import AsmevoError


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
        try:
            return Edit(function=d["function"], start=int(d["start"]), end=int(d["end"]),
                        lines=tuple(d["lines"]), operator=d.get("operator", ""),
                        note=d.get("note", ""),
                        descriptor=tuple((k, int(v)) for k, v in d.get("descriptor", [])))
        except (KeyError, TypeError, ValueError) as exc:
            raise EditFormatError(f"malformed edit {d!r}: {exc}") from exc

    def __str__(self) -> str:
        head = f"{self.function}[{self.start}:{self.end}] -> {len(self.lines)} lines"
        who = f" ({self.operator}{': ' + self.note if self.note else ''})" if self.operator else ""
        return head + who


def edits_to_json(edits: tuple[Edit, ...]) -> str:
    return json.dumps([e.to_json() for e in edits], separators=(",", ":"))


def edits_from_json(text: str) -> tuple[Edit, ...]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EditFormatError(f"edit list is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise EditFormatError("edit list is not a list")
    return tuple(Edit.from_json(d) for d in raw)


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
