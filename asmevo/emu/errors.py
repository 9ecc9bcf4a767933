"""The emulator's exceptions: one base, :class:`EmulatorError`, and one type per verdict.

Every error that ends a launch names the kernel and the instruction address;
:func:`asmevo.emu.run_launch` turns them into :class:`LaunchResult` verdicts.
"""
from __future__ import annotations

from asmevo.errors import AsmevoError


class EmulatorError(AsmevoError):
    """Base of every error the emulator raises."""

    status = "fault"
    byte_address: int | None = None     # the memory byte a fault names (MemoryFault)


class UnsupportedInstruction(EmulatorError):
    """An instruction (or an operand form of one) the emulator does not model."""

    status = "unsupported"

    def __init__(self, mnemonic: str, kernel: str | None = None, address: int | None = None,
                 detail: str = ""):
        self.mnemonic = mnemonic
        msg = f"unsupported instruction {mnemonic!r}" + (f" ({detail})" if detail else "")
        super().__init__(msg, kernel=kernel, address=address)


class MemoryFault(EmulatorError):
    """An out-of-bounds, unmapped, read-only or misaligned memory access."""

    def __init__(self, message: str, *, kernel: str | None = None, address: int | None = None,
                 byte_address: int | None = None):
        self.byte_address = byte_address
        super().__init__(message, kernel=kernel, address=address)


class ControlFault(EmulatorError):
    """A jump to an address that is not the start of an instruction, or a bad PC."""


class InternalError(EmulatorError):
    """An instruction's implementation failed (an emulator bug, not the kernel's doing).

    Never a ``fault``: the kernel is not judged, the verdict says the emulator
    could not execute the instruction."""

    status = "unsupported"


class LaunchTimeout(EmulatorError):
    """The launch ran past its instruction budget (most likely an infinite loop)."""

    status = "timeout"


class DecodeError(EmulatorError):
    """Instruction text the emulator cannot parse."""

    status = "unsupported"


class LaunchError(EmulatorError):
    """A launch that cannot be set up (bad spec, missing inputs, too-large grid)."""
