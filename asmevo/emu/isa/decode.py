"""From instruction text to executable form, once per Program.

Every mnemonic family module is imported here, and registers its builders in
:data:`asmevo.emu.isa.insn.BUILDERS` as it loads (vmem before scratch, whose
builders wrap vmem's: scratch imports vmem itself). Anything without a
builder decodes to a stub that raises :class:`UnsupportedInstruction` when
executed, so unknown code is never skipped silently.
"""
from __future__ import annotations

from asmevo.emu.isa import gfx950
from asmevo.emu.isa import (cvt8, division, fatomic, lanes, lds, mfma, mfma_fp8,  # noqa: F401
                            packed, salu, scratch, smem, smem_atomic, trans, valu, vcmp, vmem,
                            wavemode)
from asmevo.emu.errors import DecodeError, EmulatorError, UnsupportedInstruction
from asmevo.emu.isa.insn import BUILDERS, Decoded, parse
from asmevo.memo import Memo


def _raiser(err: EmulatorError):
    def fn(ctx):
        raise err
    return fn


# Straight-line and control decodes by (text, accum_offset, processor): their closures
# depend on nothing else (runtime errors name the address the scheduler puts in the
# Ctx; branch targets are resolved on a copy), and unoptimized code repeats the same
# lines many times (-O0 HIP: 73k lines, 16k distinct); a candidate repeats K0's.
_OP_CACHE_MAX = 50_000
_OP_CACHE: Memo[Decoded] = Memo("emu.decode.ops", _OP_CACHE_MAX)


def decode_one(text: str, *, index: int, address: int | None, kernel: str | None,
               accum_offset: int, processor: str) -> Decoded:
    """Decode one instruction; failures become a stub that raises when executed."""
    key = (text, accum_offset, processor)
    hit = _OP_CACHE.get(key)
    if hit is not None:
        if hit.ctl != "op":         # control: a copy (the image sets its branch target)
            d = _copy(hit)
            d.index, d.address = index, address
            return d
        if hit.index == index and hit.address == address and not hit.extra:
            return hit              # the same line at the same place (a candidate of K0)
        d = _copy(hit)
        d.index, d.address, d.extra = index, address, {}
        return d
    d = _decode_one(text, index=index, address=address, kernel=kernel,
                    accum_offset=accum_offset, processor=processor)
    cacheable = (d.ctl == "op" and d.target_label is None and not d.extra) or \
        d.ctl in _CONTROL
    if cacheable:
        _OP_CACHE.put(key, d if d.ctl == "op" else _copy(d))   # control: kept pristine
    return d


# control kinds whose decode is a function of the text alone (labels resolved later)
_CONTROL = ("branch", "cbranch", "end", "barrier", "getpc", "setpc", "swappc", "trap")


def _copy(d: Decoded) -> Decoded:
    """A shallow copy (copy.copy is 4x slower, dataclasses.replace 16x)."""
    out = Decoded.__new__(Decoded)
    out.__dict__.update(d.__dict__)
    return out


def _decode_one(text: str, *, index: int, address: int | None, kernel: str | None,
                accum_offset: int, processor: str) -> Decoded:
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
