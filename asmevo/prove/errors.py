"""The prover's one exception root, and the refusal of an instruction it cannot model."""
from __future__ import annotations

from asmevo.errors import AsmevoError


class ProveError(AsmevoError):
    """Something the prover cannot do (no solver, a program it cannot read)."""


class Unsupported(ProveError):
    """An instruction (or an operand form of one) the symbolic semantics do not model
    exactly: a proof that needs it ends ``unknown``, never approximated."""

    def __init__(self, text: str, why: str = ""):
        self.text = text
        self.why = why
        super().__init__(f"{text!r}: {why}" if why else repr(text))


class OutOfTime(ProveError):
    """The proof's time budget ran out inside a window (building its terms can take
    longer than any one solver question): what is left of the proof is ``unknown``."""
