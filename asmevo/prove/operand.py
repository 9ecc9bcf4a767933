"""Operands as terms: what :mod:`asmevo.emu.isa.operands` and :mod:`asmevo.emu.isa.vsrc` read
and write, the same rules on symbolic state.

The text is parsed by the emulator's own parser (:func:`asmevo.emu.isa.insn.parse`), and
constants get their bits from its :func:`~asmevo.emu.isa.operands.const_bits`, so an
operand means the same thing to both semantics by construction. Vector sources
are terms in :data:`~asmevo.prove.term.LANE`; scalar sources are lane-free.
"""
from __future__ import annotations

from asmevo.emu.isa.operands import (_APERTURES, _CONST_SPECIAL, Operand, const_bits,
                                 const_bits_f64)
from asmevo.emu.isa.vsrc import dpp_source_lanes, dpp_write_mask
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import VCC, Machine
from asmevo.prove.term import at_lane, b2bv, bv, cat, lane_table, low, zext
from asmevo.prove.z3env import z3


def raw(m: Machine, op: Operand, w: int, vector: bool, *, f64: bool = False, text: str = ""):
    """The operand's raw bits: 32 bits for ``w`` <= 32, 64 for 64 (raw_reader). A vector
    register is read as an instruction that uses it in EXEC's lanes only
    (:meth:`Machine.vuse`): every caller uses the value only there (a DPP source at a
    lane EXEC has on)."""
    if op.kind == "v":
        if not vector:
            raise Unsupported(text, f"VGPR operand {op.text} in a scalar slot")
        return cat(m.vuse(op.reg + 1), m.vuse(op.reg)) if w == 64 else m.vuse(op.reg)
    if op.kind == "s":
        return m.sget64(op.reg) if w == 64 else m.sget(op.reg)
    if op.kind == "const":
        if w == 16 and not f64:
            return bv(const_bits(op, 16), 32)
        bits = const_bits_f64(op) if f64 else const_bits(op, 64 if w == 64 else 32)
        return bv(bits, 64 if w == 64 else 32)
    if op.kind == "special":
        return _special(m, op.text, w, text)
    raise Unsupported(text, f"operand {op.text!r}")


def _special(m: Machine, name: str, w: int, text: str):
    out = 64 if w == 64 else 32
    if name in _CONST_SPECIAL:
        val = _CONST_SPECIAL[name]
        if w == 64 and name in _APERTURES:
            val = (_APERTURES[name] << 32) | (0xFFFFFFFF if name.endswith("limit") else 0)
        return bv(val, out)
    if name in ("src_scc", "scc"):
        return b2bv(m.scc, out)
    if name == "src_execz":
        return b2bv(m.exec64() == 0, out)
    if name == "src_vccz":
        return b2bv(m.sget64(VCC) == 0, out)
    raise Unsupported(text, f"operand {name}")


def typed(m: Machine, op: Operand, typ: str, vector: bool = True, hi: bool = False,
          text: str = ""):
    """The operand as the bits of type ``typ`` (f32, i32, u16, ...): 16-bit types are
    16-bit terms (``hi``: the high half), float abs/neg act on the sign bit
    (typed_reader)."""
    kind, w = typ[0], int(typ[1:])
    if w == 16 and op.kind == "const":
        x = raw(m, op, 16, vector, text=text)
    else:
        x = raw(m, op, 32 if w == 16 else w, vector, f64=(typ == "f64"), text=text)
    neg = op.neg if kind == "f" else False
    absm = op.abs if kind == "f" else False
    if op.kind == "const":
        neg = absm = False
    if w == 16:
        x = z3.Extract(31, 16, x) if hi else z3.Extract(15, 0, x)
    return sign_mods(x, neg, absm)


def sign_mods(x, neg: bool, absm: bool):
    w = x.size()
    if absm:
        x = x & bv((1 << (w - 1)) - 1, w)
    if neg:
        x = x ^ bv(1 << (w - 1), w)
    return x


def mask(m: Machine, op: Operand, text: str = ""):
    """An SGPR pair (or constant) read as a 64-bit lane mask (mask_reader)."""
    if op.kind == "s":
        return m.sget64(op.reg)
    if op.kind == "const":
        return bv(const_bits(op, 64), 64)
    raise Unsupported(text, f"operand {op.text!r} is not a lane mask")


class Dpp:
    """src0 of a DPP instruction: lane ``src(LANE)``, and where the write is enabled
    (the emulator's tables of :func:`dpp_source_lanes` and :func:`dpp_write_mask`)."""

    def __init__(self, ins):
        src = [int(x) for x in dpp_source_lanes(ins)]
        self.valid = lane_set(tuple(x >= 0 for x in src))
        self.src = lane_table(tuple(max(x, 0) for x in src), 6)
        self.static = lane_set(tuple(bool(x) for x in dpp_write_mask(ins)))
        self.bound_ctrl = "bound_ctrl" in ins.mods

    def read(self, m: Machine, x):
        """(src0's bits at its source lane, the per-lane write enable)."""
        val = at_lane(x, self.src)
        ok = z3.And(m.bit(m.exec64(), self.src), self.valid)
        if self.bound_ctrl:
            return z3.If(ok, val, bv(0, x.size())), self.static
        return val, z3.And(ok, self.static)


def lane_set(bits: tuple[bool, ...]):
    """The Bool in LANE that is ``bits[lane]``: the constant where every lane has one
    value (a DPP that writes every lane writes as any instruction does: its
    ``If(EXEC's bit, new, old)`` is read back as ``new`` by :meth:`Machine.vuse`, and a
    chain of them does not carry every earlier value of its registers)."""
    if len(set(bits)) == 1:
        return z3.BoolVal(bits[0])
    return lane_table(tuple(int(b) for b in bits), 1) == 1


def source(m: Machine, ins, op: Operand, typ: str, slot: int, dpp: Dpp | None = None):
    """(bits of source ``slot`` with its modifiers, the DPP write enable or None)
    (vsrc.source)."""
    w = int(typ[1:])
    opsel = ins.mods.get("op_sel")
    hi = bool(opsel[slot]) if (opsel and w == 16 and slot < len(opsel) - 1) else False
    if ins.encoding == "sdwa":
        raise Unsupported(ins.text, "SDWA operands")
    if dpp is not None and slot == 0:
        if w > 32:
            raise Unsupported(ins.text, "64-bit DPP source")
        x, en = dpp.read(m, raw(m, op, 32, True, text=ins.text))
        if w == 16:
            x = z3.Extract(31, 16, x) if hi else z3.Extract(15, 0, x)
        neg = op.neg if typ[0] == "f" else False
        absm = op.abs if typ[0] == "f" else False
        return sign_mods(x, neg, absm), en
    return typed(m, op, typ, True, hi=hi, text=ins.text), None


def write(m: Machine, ins, dst: Operand, typ: str, bits, enable=None) -> None:
    """Store raw result bits with the encoding's rules (result_writer)."""
    if dst.kind != "v":
        raise Unsupported(ins.text, f"vector destination {dst.text}")
    r = dst.reg
    w = int(typ[1:])
    if ins.encoding == "sdwa":
        raise Unsupported(ins.text, "SDWA destination")
    if w == 64:
        m.vwrite(r, z3.Extract(31, 0, bits), enable)
        m.vwrite(r + 1, z3.Extract(63, 32, bits), enable)
        return
    if w == 16:
        opsel = ins.mods.get("op_sel")
        b16 = low(bits, 16)
        if opsel and opsel[-1]:
            m.vwrite(r, cat(b16, z3.Extract(15, 0, m.vuse(r))), enable)
        else:
            m.vwrite(r, zext(b16, 32), enable)
        return
    m.vwrite(r, low(bits, 32), enable)

