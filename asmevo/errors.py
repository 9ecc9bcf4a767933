"""The root of asmevo's exceptions.

Every package raises its own subclass of :class:`AsmevoError`, so the CLI can
turn any expected failure into one line and exit code 2 while a genuine bug
still shows its traceback.
"""
from __future__ import annotations

import re


class AsmevoError(Exception):
    """Base of every error asmevo raises on bad input or a missing tool."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None,
                 kernel: str | None = None, address: int | None = None,
                 detail: str | None = None):
        self.message = message
        self.path = path
        self.kernel = kernel
        self.address = address
        self.detail = detail        # e.g. a tool's whole stderr: shown with --verbose only
        super().__init__(self._render())

    def in_file(self, path: str) -> "AsmevoError":
        """This error naming ``path`` (if it named no file yet); returns itself."""
        if not self.path:
            self.path = str(path)
            self.args = (self._render(),)
        return self

    def _render(self) -> str:
        where = []
        if self.path:
            where.append(str(self.path))
        if self.kernel:
            where.append(f"kernel {self.kernel}")
        if self.address is not None:
            where.append(f"at 0x{self.address:x}")
        return (": ".join([", ".join(where), self.message]) if where
                else self.message)


class TargetError(AsmevoError):
    """Root of the targets layer's errors: each ISA family's own root derives from it."""


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def has_control_characters(text: str) -> bool:
    """True where ``text`` holds a character that would break or hide part of a one-line
    message: C0 and C1 controls (tab aside), DEL, the Unicode line and paragraph
    separators. Input strings that end up in messages or paths are refused for it."""
    return _CONTROL.search(text) is not None
