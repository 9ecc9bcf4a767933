"""The archive package's one exception type (its own module, so every part can raise it)."""
from __future__ import annotations

from asmevo.errors import AsmevoError


class ArchiveError(AsmevoError):
    """A missing, corrupt, foreign or too-new archive, or a write it refuses."""
