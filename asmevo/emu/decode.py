"""From instruction text to executable form, once per Program.

Each mnemonic family module registers *builders* in :data:`BUILDERS`, keyed by
the mnemonic without its encoding suffix (``_e32``, ``_e64``, ``_sdwa``,
``_dpp``). A builder turns one parsed instruction into a :class:`Decoded`:
a closure ``fn(ctx)`` for straight-line work, or a control kind the scheduler
handles (branches, barriers, end of program). Anything without a builder
decodes to a stub that raises :class:`UnsupportedInstruction` when executed,
so unknown code is never skipped silently.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

from asmevo.emu import gfx950
from asmevo.emu.errors import DecodeError, EmulatorError, UnsupportedInstruction
from asmevo.emu.operands import Operand, parse_modifiers, parse_operand, split_operands

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
    processor: str = "gfx942"

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


def _raiser(err: EmulatorError):
    def fn(ctx):
        raise err
    return fn


# Straight-line decodes by (text, accum_offset, processor): their closures depend on
# nothing else (runtime errors name the address the scheduler puts in the Ctx), and
# unoptimized code repeats the same lines many times (-O0 HIP: 73k lines, 16k distinct).
_OP_CACHE: dict[tuple[str, int, str], Decoded] = {}
_OP_CACHE_MAX = 50_000


def decode_one(text: str, *, index: int, address: int | None, kernel: str | None,
               accum_offset: int, processor: str) -> Decoded:
    """Decode one instruction; failures become a stub that raises when executed."""
    key = (text, accum_offset, processor)
    hit = _OP_CACHE.get(key)
    if hit is not None:
        d = copy.copy(hit)              # (dataclasses.replace costs several times more)
        d.index, d.address = index, address
        return d
    d = _decode_one(text, index=index, address=address, kernel=kernel,
                    accum_offset=accum_offset, processor=processor)
    if d.ctl == "op" and d.target_label is None and not d.extra:
        if len(_OP_CACHE) >= _OP_CACHE_MAX:
            _OP_CACHE.clear()
        _OP_CACHE[key] = d
    return d


def _decode_one(text: str, *, index: int, address: int | None, kernel: str | None,
                accum_offset: int, processor: str) -> Decoded:
    _load_families()
    try:
        insn = parse(text, index=index, address=address, kernel=kernel,
                     accum_offset=accum_offset, processor=processor)
    except (ValueError, IndexError, DecodeError) as exc:
        err = UnsupportedInstruction(text.split()[0] if text.split() else text, kernel, address,
                                     f"cannot parse operands: {exc}")
        return Decoded(index, text, text.split()[0] if text else "", address, ctl="fault",
                       fn=_raiser(err), error=err)
    builder = BUILDERS.get(insn.base) or BUILDERS.get(insn.mnemonic)
    why = gfx950.refusal(insn.base, processor)
    if builder is None or why is not None:
        err = insn.fail(why or gfx950.missing(processor))
        return Decoded(index, text, insn.mnemonic, address, ctl="fault", fn=_raiser(err), error=err)
    try:
        d = builder(insn)
    except EmulatorError as exc:
        if exc.address is None:
            exc = UnsupportedInstruction(insn.mnemonic, kernel, address, exc.message)
        return Decoded(index, text, insn.mnemonic, address, ctl="fault", fn=_raiser(exc), error=exc)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        err = insn.fail(f"cannot decode operands ({exc})")
        return Decoded(index, text, insn.mnemonic, address, ctl="fault", fn=_raiser(err), error=err)
    d.index, d.text, d.mnemonic, d.address = index, text, insn.mnemonic, address
    return d


def op(fn: Callable) -> Decoded:
    """A straight-line instruction (the common case)."""
    return Decoded(0, "", "", None, ctl="op", fn=fn)


_LOADED = False


def _load_families() -> None:
    global _LOADED
    if _LOADED:
        return
    from asmevo.emu import lds, mfma, packed, salu, smem, valu, vcmp, vmem, lanes  # noqa: F401
    from asmevo.emu import division, scratch, trans  # noqa: F401
    from asmevo.emu import gpridx  # noqa: F401
    _LOADED = True
