"""The amdgpu target's exceptions: one root, and one refusal that carries its reason.

Every error the target raises derives from :class:`AmdgpuError` (a
:class:`~asmevo.errors.TargetError`): a file that is not a code object, a descriptor or
metadata that cannot be decoded, a missing LLVM tool, a launch that does not fit the
kernel's arguments. A candidate the target will not build is a :class:`Refused`: its
``status`` is the verdict it becomes (``unsafe``, ``invalid``, ``build``) and its
``reason`` the verdict's text, so the pipeline turns any refusal into a verdict in one
place. The public names (``UnsafeEdit``, ``EditError``, ``BuildError``, ``PatchError``)
are its kinds, defined beside what raises them.
"""
from __future__ import annotations

from asmevo.errors import TargetError
from asmevo.verdict import Verdict


class AmdgpuError(TargetError):
    """Base of every error the amdgpu target raises."""


class Refused(AmdgpuError):
    """A candidate the target refuses to apply or build, with the reason."""

    status = "invalid"          # the verdict it becomes

    @property
    def reason(self) -> str:
        return str(self)

    def verdict(self, prefix: str = "", details: dict | None = None) -> Verdict:
        """The verdict refusing the candidate (``prefix``: where it was refused)."""
        return Verdict(self.status, prefix + self.reason, dict(details or {}))
