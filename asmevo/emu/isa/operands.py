"""Operands of one instruction's text: parsing, and readers that fetch typed values.

The text is llvm-objdump's (or an edit's) canonical form. Parsing happens once
per instruction; what it produces are small closures ``read(ctx) -> ndarray``
that the semantics call on every execution. Vector readers return arrays that
broadcast to ``(waves, 64)``; scalar readers return ``(waves,)`` arrays.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from asmevo.emu.numerics import exact as numerics
from asmevo.emu.errors import DecodeError
from asmevo.emu.machine.state import EXEC, FLAT_SCRATCH, M0, TTMP0, VCC, XNACK_MASK
from asmevo.targets.syntax import comma_fields, top_level_words

_REG = re.compile(r"^([svat]|ttmp)(?:\[(\d+)(?::(\d+))?\]|(\d+))$")
_SPECIAL = {
    "vcc": (VCC, 2), "vcc_lo": (VCC, 1), "vcc_hi": (VCC + 1, 1),
    "exec": (EXEC, 2), "exec_lo": (EXEC, 1), "exec_hi": (EXEC + 1, 1),
    "m0": (M0, 1), "flat_scratch": (FLAT_SCRATCH, 2), "flat_scratch_lo": (FLAT_SCRATCH, 1),
    "flat_scratch_hi": (FLAT_SCRATCH + 1, 1), "xnack_mask": (XNACK_MASK, 2),
    "xnack_mask_lo": (XNACK_MASK, 1), "xnack_mask_hi": (XNACK_MASK + 1, 1),
}
SHARED_APERTURE_HI = 0x00010000      # flat addresses with these high bits go to LDS
PRIVATE_APERTURE_HI = 0x00020000
_CONST_SPECIAL = {
    "src_shared_base": SHARED_APERTURE_HI, "src_shared_limit": SHARED_APERTURE_HI | 0xFFFF,
    "src_private_base": PRIVATE_APERTURE_HI, "src_private_limit": PRIVATE_APERTURE_HI | 0xFFFF,
    "src_pops_exiting_wave_id": 0,
}

_APERTURES = {"src_shared_base": SHARED_APERTURE_HI, "src_shared_limit": SHARED_APERTURE_HI,
              "src_private_base": PRIVATE_APERTURE_HI, "src_private_limit": PRIVATE_APERTURE_HI}
_U32 = np.uint32
_U64 = np.uint64


@dataclass(frozen=True)
class Operand:
    """One parsed operand. ``kind``: v, s, a (registers), const (integer or float
    text), special (src_scc and friends), off, label, other."""

    kind: str
    text: str
    reg: int = 0
    count: int = 1
    neg: bool = False
    abs: bool = False
    sext: bool = False
    literal: bool = False     # lit(...): a literal encoding even of an inline-range value


def split_operands(rest: str) -> tuple[list[str], list[str]]:
    """Operands (comma separated, bracket aware) and trailing space-separated modifiers."""
    ops, last = comma_fields(rest)
    mods: list[str] = []
    if last:
        parts = top_level_words(last)
        ops.append(parts[0])
        mods = parts[1:]
    return ops, mods


def parse_modifiers(mods: list[str]) -> dict[str, object]:
    """``offset:16`` -> {"offset": 16}; ``glc`` -> {"glc": True}; lists stay lists."""
    out: dict[str, object] = {}
    for m in mods:
        if ":" in m:
            key, _, val = m.partition(":")
            if val.startswith("["):
                out[key] = [int(x, 0) for x in val.strip("[]").split(",")]
            else:
                try:
                    out[key] = int(val, 0)
                except ValueError:
                    out[key] = val
        else:
            out[m] = True
    return out


def parse_operand(text: str, accum_offset: int = 0) -> Operand:
    t = text.strip()
    neg = abs_ = sext = False
    if t.startswith("-") and len(t) > 1 and not t[1].isdigit():
        neg, t = True, t[1:]
    if t.startswith("|") and t.endswith("|"):
        abs_, t = True, t[1:-1]
    elif t.startswith("abs(") and t.endswith(")"):
        abs_, t = True, t[4:-1]
    if t.startswith("neg(") and t.endswith(")"):
        neg, t = True, t[4:-1]
    if t.startswith("sext(") and t.endswith(")"):
        sext, t = True, t[5:-1]
    if t.startswith("lit(") and t.endswith(")") and re.match(r"^(0x[0-9a-fA-F]+|\d+)$", t[4:-1]):
        # llvm-objdump's mark for a 32-bit literal whose value an inline constant could
        # also encode (e.g. a relocated s_add_u32 s0, s0, lit(0x18) after s_getpc)
        return Operand("const", ("-" + t[4:-1]) if neg else t[4:-1], abs=abs_, literal=True)
    m = _REG.match(t)
    if m:
        kind = m.group(1)
        if m.group(4) is not None:
            first = last = int(m.group(4))
        else:
            first = int(m.group(2))
            last = int(m.group(3)) if m.group(3) is not None else first
        count = last - first + 1
        if kind == "ttmp":
            return Operand("s", text, TTMP0 + first, count, neg, abs_, sext)
        if kind == "a":
            if accum_offset < 0:
                raise DecodeError(f"AGPR operand {text} in a function called by kernels with "
                                  "different accum_offset")
            return Operand("v", text, accum_offset + first, count, neg, abs_, sext)
        if kind == "t":
            raise DecodeError(f"bad register {text!r}")
        return Operand(kind, text, first, count, neg, abs_, sext)
    if t in _SPECIAL:
        r, n = _SPECIAL[t]
        return Operand("s", text, r, n, neg, abs_, sext)
    if t in ("off",):
        return Operand("off", text)
    if t in ("src_scc", "scc", "src_vccz", "src_execz", "src_lds_direct") or t in _CONST_SPECIAL:
        return Operand("special", t, neg=neg, abs=abs_)
    if re.match(r"^-?(0x[0-9a-fA-F]+|\d+)$", t) or t in numerics.FLOAT_INLINE \
            or re.match(r"^-?\d+\.\d*(e[-+]?\d+)?$", t):
        return Operand("const", ("-" + t) if neg else t, abs=abs_)
    return Operand("other", text)


def const_bits(op: Operand, width: int, signed: bool = False) -> int:
    """The bit pattern of a constant operand for an operand slot of ``width`` bits."""
    t = op.text
    fb = numerics.float_inline_bits(t, width)
    if fb is not None:
        bits = fb
    elif re.match(r"^-?\d+\.\d*", t):
        v = float(t)
        if width == 16:
            bits = int(np.array(v, np.float16).view(np.uint16))
        elif width == 64:
            bits = int(np.array(v, np.float64).view(np.uint64))
        else:
            bits = int(np.array(v, np.float32).view(np.uint32))
    else:
        v = int(t, 0)
        inline = -16 <= v <= 64 and not op.literal
        if width == 64:
            if inline or v < 0:
                bits = v & (2**64 - 1)
            else:
                bits = v & 0xFFFFFFFF     # 32-bit literal, zero-extended
        else:
            bits = v & ((1 << width) - 1) if width < 32 else v & 0xFFFFFFFF
            if width == 16 and not inline and v > 0xFFFF:
                bits = v & 0xFFFF
    if op.abs:
        bits &= ~(1 << (width - 1))
    return bits


def const_bits_f64(op: Operand) -> int:
    """Float64 operands: a 32-bit non-inline literal is the high half."""
    t = op.text
    if numerics.float_inline_bits(t, 64) is not None or re.match(r"^-?\d+\.\d*", t):
        return const_bits(op, 64)
    v = int(t, 0)
    if -16 <= v <= 64 and not op.literal:
        return v & (2**64 - 1)
    return (v & 0xFFFFFFFF) << 32


# -- readers --------------------------------------------------------------

def raw_reader(op: Operand, width: int, vector: bool, *, f64: bool = False):
    """A closure returning the operand's raw bits: uint32 for width <= 32, uint64 for 64.

    ``vector``: shapes broadcast against (w, 64); otherwise scalar shape (w,).
    """
    if op.kind == "v":
        if not vector:
            raise DecodeError(f"VGPR operand {op.text} in a scalar slot")
        r = op.reg
        if width == 64:
            return lambda c: c.vr64(r)
        return lambda c: c.vr(r)
    if op.kind == "s":
        r = op.reg
        if width == 64:
            if vector:
                return lambda c: c.sr64(r)[:, None]
            return lambda c: c.sr64(r)
        if vector:
            return lambda c: c.sr(r)[:, None]
        return lambda c: c.sr(r)
    if op.kind == "const":
        bits = const_bits_f64(op) if f64 else const_bits(op, 64 if width == 64 else 32)
        if width == 16 and not f64:
            bits = const_bits(op, 16)
        arr = np.array(bits, _U64 if width == 64 else _U32)
        return lambda c: arr
    if op.kind == "special":
        name = op.text
        if name in _CONST_SPECIAL:
            val = _CONST_SPECIAL[name]
            if width == 64 and name in _APERTURES:   # 64-bit: the aperture's base address
                val = (_APERTURES[name] << 32) | (0xFFFFFFFF if name.endswith("limit") else 0)
            arr = np.array(val, _U64 if width == 64 else _U32)
            return lambda c: arr
        dt = _U64 if width == 64 else _U32

        def special(c):
            if name in ("src_scc", "scc"):
                val = c.scc().astype(dt)
            elif name == "src_execz":
                val = (c.st.nactive[c.idx] == 0).astype(dt)
            elif name == "src_vccz":
                val = ((c.sr(VCC) | c.sr(VCC + 1)) == 0).astype(dt)
            else:
                raise DecodeError(f"operand {name} is not supported")
            return val[:, None] if vector else val
        return special
    raise DecodeError(f"operand {op.text!r} cannot be read")


_FLOAT_VIEW = {16: np.float16, 32: np.float32, 64: np.float64}
_INT_VIEW = {("i", 16): np.int16, ("u", 16): np.uint16, ("b", 16): np.uint16,
             ("i", 32): np.int32, ("u", 32): np.uint32, ("b", 32): np.uint32,
             ("i", 64): np.int64, ("u", 64): np.uint64, ("b", 64): np.uint64}


def typed_reader(op: Operand, typ: str, vector: bool = True, hi: bool = False,
                 extra_neg: bool = False, extra_abs: bool = False):
    """A closure returning the operand as numpy values of ``typ`` (f32, i32, u16, ...).

    ``hi`` selects the high half of a 32-bit register for 16-bit types (op_sel).
    Float abs/neg modifiers act on the sign bit, exactly like the hardware.
    """
    kind, width = typ[0], int(typ[1:])
    if width == 16 and op.kind == "const":
        raw = raw_reader(op, 16, vector)      # the constant in 16-bit format
    else:
        raw = raw_reader(op, 32 if width == 16 else width, vector, f64=(typ == "f64"))
    neg = op.neg ^ extra_neg if kind == "f" else False
    absm = (op.abs or extra_abs) if kind == "f" else False
    if op.kind == "const":
        neg = extra_neg if kind == "f" else False   # a constant's sign is in its value
        absm = extra_abs if kind == "f" else False
    if width == 16:
        shift = _U32(16 if hi else 0)
        view = _FLOAT_VIEW[16] if kind == "f" else _INT_VIEW[(kind, 16)]
        sign = 0x8000

        def rd16(c):
            x = (raw(c) >> shift) & _U32(0xFFFF)
            if absm:
                x = x & _U32(0x7FFF)
            if neg:
                x = x ^ _U32(sign)
            return x.astype(np.uint16).view(view)
        return rd16
    if width == 32:
        view = _FLOAT_VIEW[32] if kind == "f" else _INT_VIEW[(kind, 32)]
        if not (absm or neg):
            if view is np.uint32:
                return raw
            return lambda c: raw(c).view(view)
        am, nm = _U32(0x7FFFFFFF), _U32(0x80000000)

        def rd32(c):
            x = raw(c)
            if absm:
                x = x & am
            if neg:
                x = x ^ nm
            return x.view(view)
        return rd32
    view = _FLOAT_VIEW[64] if kind == "f" else _INT_VIEW[(kind, 64)]
    am, nm = _U64(0x7FFFFFFFFFFFFFFF), _U64(0x8000000000000000)

    def rd64(c):
        x = raw(c)
        if absm:
            x = x & am
        if neg:
            x = x ^ nm
        return x.view(view)
    return rd64


def mask_reader(op: Operand):
    """An SGPR pair (or constant) read as a (w, 64) bool lane mask."""
    if op.kind == "s":
        r = op.reg
        return lambda c: c.lane_mask_read(r)
    if op.kind == "const":
        bits = const_bits(op, 64)
        m = ((np.uint64(bits) >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(bool)
        return lambda c: np.broadcast_to(m, (c.w, 64))
    raise DecodeError(f"operand {op.text!r} is not a lane mask")
