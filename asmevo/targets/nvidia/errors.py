"""The nvidia target's exception root: every error it raises derives from :class:`NvidiaError`."""
from __future__ import annotations

from asmevo.errors import TargetError


class NvidiaError(TargetError):
    """Base of every error the nvidia target raises."""
