"""The launch package's one exception: a spec that is malformed or does not evaluate."""
from __future__ import annotations

from asmevo.errors import AsmevoError


class SpecError(AsmevoError):
    """A launch spec that is malformed, names unknown keys, or does not evaluate."""
