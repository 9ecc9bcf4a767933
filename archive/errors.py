"""The archive package's one exception type (its own module, so every part can raise it).

The archive imports nothing of asmevo (it is the bottom of the package graph:
asmevo and operators import it, never the other way), so its error is not an
:class:`~asmevo.errors.AsmevoError`; the CLI and the ablation cells catch both
(:data:`asmevo.errors.EXPECTED`). It carries what the CLI prints: the message,
the file it names, and exit code 2.
"""
from __future__ import annotations


class ArchiveError(Exception):
    """A missing, corrupt, foreign or too-new archive, or a write it refuses."""

    exit_code = 2
    detail: str | None = None

    def __init__(self, message: str, *, path: str | None = None):
        self.message, self.path = message, path
        super().__init__(f"{path}: {message}" if path else message)

    def in_file(self, path: str) -> "ArchiveError":
        """This error naming ``path`` (if it named no file yet); returns itself."""
        if not self.path:
            self.path = str(path)
            self.args = (f"{self.path}: {self.message}",)
        return self
