"""What a builder sees and returns: a parsed instruction and its executable form.

The mnemonic family modules (salu, valu, vmem, ...) register *builders* here in
:data:`BUILDERS` with :func:`register`, keyed by the mnemonic without its
encoding suffix (``_e32``, ``_e64``, ``_sdwa``, ``_dpp``). A builder turns one
parsed :class:`Insn` into a :class:`Decoded`: a closure ``fn(ctx)`` for
straight-line work (:func:`op`), or a control kind the scheduler handles
(branches, barriers, end of program). :mod:`asmevo.emu.isa.decode` imports every
family and looks builders up; the families import only this module, never the
decoder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from asmevo.emu.errors import EmulatorError, UnsupportedInstruction
from asmevo.emu.isa.operands import Operand, parse_modifiers, parse_operand, split_operands
from asmevo.targets.amdgpu.processors import DEFAULT

ENCODING_SUFFIXES = ("_e32", "_e64", "_sdwa", "_dpp")


@dataclass
class Insn:
    """One instruction's parsed text plus what its builder needs to know."""

    text: str
    mnemonic: str
    base: str
    encoding: str            # "", "e32", "e64", "sdwa", "dpp"
    ops: list[Operand]
    mods: dict[str, object]
    raw_ops: list[str]
    kernel: str | None
    address: int | None
    index: int
    processor: str = DEFAULT

    def fail(self, detail: str = "") -> UnsupportedInstruction:
        return UnsupportedInstruction(self.mnemonic, self.kernel, self.address, detail)


@dataclass
class Decoded:
    """The executable form of one instruction."""

    index: int
    text: str
    mnemonic: str
    address: int | None
    ctl: str = "op"          # op | branch | cbranch | end | barrier | setpc | swappc | fault
    fn: Callable | None = None
    cond: Callable | None = None
    target: int | None = None
    target_label: str | None = None
    error: EmulatorError | None = None
    extra: dict = field(default_factory=dict)
    # reads the launch's approx_variant (asmevo.emu.run.batch then runs it once per member)
    variant: bool = False


Builder = Callable[[Insn], Decoded]
BUILDERS: dict[str, Builder] = {}


def register(*names: str):
    """Decorator: ``@register("s_add_u32", ...)`` for a builder of those mnemonics."""
    def deco(fn: Builder) -> Builder:
        for n in names:
            BUILDERS[n] = fn
        return fn
    return deco


def split_mnemonic(mnemonic: str) -> tuple[str, str]:
    for suf in ENCODING_SUFFIXES:
        if mnemonic.endswith(suf):
            return mnemonic[: -len(suf)], suf[1:]
    return mnemonic, ""


def parse(text: str, *, index: int, address: int | None, kernel: str | None,
          accum_offset: int, processor: str) -> Insn:
    text = text.split("//")[0].strip()
    parts = text.split(None, 1)
    mnemonic = parts[0] if parts else ""
    rest = parts[1] if len(parts) > 1 else ""
    raw_ops, mods = split_operands(rest) if rest else ([], [])
    base, enc = split_mnemonic(mnemonic)
    ops = [parse_operand(o, accum_offset) for o in raw_ops]
    return Insn(text=text, mnemonic=mnemonic, base=base, encoding=enc, ops=ops,
                mods=parse_modifiers(mods), raw_ops=raw_ops, kernel=kernel, address=address,
                index=index, processor=processor)


def op(fn: Callable, *, variant: bool = False) -> Decoded:
    """A straight-line instruction (the common case); ``variant``: ``fn`` reads the
    launch's ``approx_variant`` (a member of the approximate-instruction families)."""
    return Decoded(0, "", "", None, ctl="op", fn=fn, variant=variant)
