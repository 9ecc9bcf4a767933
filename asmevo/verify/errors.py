"""The verify package's one exception type."""
from __future__ import annotations

from asmevo.errors import AsmevoError


class VerifyError(AsmevoError):
    """A verification request that cannot be carried out as configured (or a K0
    that fails every input set itself)."""
