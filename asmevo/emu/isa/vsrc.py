"""Source operands of vector instructions with their encoding modifiers: DPP
lane permutations, SDWA sub-dword selects, VOP3 op_sel, and the write side of
those (DPP row/bank masks, SDWA dst_sel/dst_unused, op_sel of the destination).
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.isa.insn import Insn
from asmevo.emu.isa.operands import Operand, raw_reader, typed_reader

U32 = np.uint32
_LANES = np.arange(64)


def dpp_source_lanes(ins: Insn) -> np.ndarray:
    """For each lane, the lane it reads src0 from under the DPP control (-1: none)."""
    m = ins.mods
    row = _LANES & ~15
    inrow = _LANES & 15
    if "quad_perm" in m:
        p = np.array(m["quad_perm"])
        return (_LANES & ~3) + p[_LANES & 3]
    if "row_shl" in m:
        n = int(m["row_shl"])
        return np.where(inrow + n < 16, _LANES + n, -1)
    if "row_shr" in m:
        n = int(m["row_shr"])
        return np.where(inrow - n >= 0, _LANES - n, -1)
    if "row_ror" in m:
        n = int(m["row_ror"])
        return row + ((inrow - n) & 15)
    if "wave_shl" in m:
        return np.where(_LANES + 1 < 64, _LANES + 1, -1)
    if "wave_shr" in m:
        return np.where(_LANES >= 1, _LANES - 1, -1)
    if "wave_rol" in m:
        return (_LANES + 1) & 63
    if "wave_ror" in m:
        return (_LANES - 1) & 63
    if "row_mirror" in m:
        return row + (15 - inrow)
    if "row_half_mirror" in m:
        return (_LANES & ~7) + (7 - (_LANES & 7))
    if "row_bcast" in m:
        n = int(m["row_bcast"])
        if n == 15:
            return np.where(_LANES >= 16, row - 1, -1)
        if n == 31:
            return np.where(_LANES >= 32, 31, -1)
    if "row_newbcast" in m:
        n = int(m["row_newbcast"])
        return row + n
    raise ins.fail("DPP control")


def dpp_write_mask(ins: Insn) -> np.ndarray:
    rm = int(ins.mods.get("row_mask", 0xF))
    bm = int(ins.mods.get("bank_mask", 0xF))
    rows = (rm >> (_LANES >> 4)) & 1
    banks = (bm >> ((_LANES >> 2) & 3)) & 1
    return (rows & banks).astype(bool)


class Dpp:
    """The DPP view of src0: permuted values plus the lanes allowed to write."""

    def __init__(self, ins: Insn):
        self.src = dpp_source_lanes(ins)
        self.valid = self.src >= 0
        self.clip = np.where(self.valid, self.src, 0)
        self.static = dpp_write_mask(ins)
        self.bound_ctrl = "bound_ctrl" in ins.mods

    def read(self, c, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values (w,64), per-lane write enable (w,64))."""
        x = np.broadcast_to(raw, (c.w, 64))[:, self.clip]
        ok = c.exec_mask()[:, self.clip] & self.valid
        if self.bound_ctrl:
            x = np.where(ok, x, U32(0))
            en = np.broadcast_to(self.static, (c.w, 64))
        else:
            en = ok & self.static
        return x, en


SDWA_SEL = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8),
            "WORD_0": (0, 16), "WORD_1": (16, 16), "DWORD": (0, 32)}


def sdwa_select(raw, sel: str, sext: bool):
    shift, width = SDWA_SEL[sel]
    if width == 32:
        return raw
    x = (raw >> U32(shift)) & U32((1 << width) - 1)
    if sext:
        sign = U32(1 << (width - 1))
        x = np.where(x & sign, x | U32((0xFFFFFFFF << width) & 0xFFFFFFFF), x).astype(U32)
    return x


def _view(x, typ, neg, absm):
    kind, width = typ[0], int(typ[1:])
    if width == 16:
        x = x & U32(0xFFFF)
        if kind == "f":
            if absm:
                x = x & U32(0x7FFF)
            if neg:
                x = x ^ U32(0x8000)
            return x.astype(np.uint16).view(np.float16)
        return x.astype(np.uint16).view(np.int16 if kind == "i" else np.uint16)
    if kind == "f":
        if absm:
            x = x & U32(0x7FFFFFFF)
        if neg:
            x = x ^ U32(0x80000000)
        return x.view(np.float32)
    return x.view(np.int32) if kind == "i" else x


def source(ins: Insn, op: Operand, typ: str, slot: int, *, dpp: Dpp | None = None):
    """A reader for source ``slot`` of a vector instruction, all modifiers applied."""
    width = int(typ[1:])
    opsel = ins.mods.get("op_sel")
    hi = bool(opsel[slot]) if (opsel and width == 16 and slot < len(opsel) - 1) else False
    if ins.encoding == "sdwa" and width <= 32:
        sel = str(ins.mods.get(f"src{slot}_sel", "DWORD"))
        raw = raw_reader(op, 32, True)
        neg, absm, sext = op.neg, op.abs, op.sext
        if op.kind == "const":
            neg = absm = False
        return lambda c: _view(sdwa_select(raw(c), sel, sext), typ, neg, absm)
    if dpp is not None and slot == 0:
        if width > 32:
            raise ins.fail("64-bit DPP source")
        raw = raw_reader(op, 32, True)
        neg, absm = op.neg, op.abs
        sh = U32(16 if hi else 0)

        def rd(c):
            x, en = dpp.read(c, raw(c))
            c.dpp_enable = en
            return _view(x >> sh if hi else x, typ, neg, absm)
        return rd
    return typed_reader(op, typ, True, hi=hi)


def result_writer(ins: Insn, dst: Operand, typ: str, *, dpp: Dpp | None = None):
    """A closure ``write(c, bits)`` storing raw result bits with the encoding's rules."""
    if dst.kind != "v":
        raise ins.fail(f"vector destination {dst.text}")
    r = dst.reg
    width = int(typ[1:])
    if width == 64:
        return lambda c, bits: c.vw64(r, bits)
    if ins.encoding == "sdwa" and "dst_sel" in ins.mods:
        sel = str(ins.mods.get("dst_sel", "DWORD"))
        unused = str(ins.mods.get("dst_unused", "UNUSED_PRESERVE"))
        shift, w = SDWA_SEL[sel]
        if w == 32:
            return lambda c, bits: c.vw(r, bits)
        field = U32(((1 << w) - 1) << shift)

        def wr_sdwa(c, bits):
            v = (np.asarray(bits, U32) << U32(shift)) & field
            if unused == "UNUSED_PRESERVE":
                v = (c.vr(r) & ~field) | v
            elif unused == "UNUSED_SEXT":
                top = (v >> U32(shift + w - 1)) & U32(1)
                hi_mask = U32((0xFFFFFFFF << (shift + w)) & 0xFFFFFFFF)
                v = np.where(top == 1, v | hi_mask, v)
            c.vw(r, v)
        return wr_sdwa
    if dpp is not None:
        return lambda c, bits: c.vw(r, bits, c.dpp_enable)
    if width == 16:
        opsel = ins.mods.get("op_sel")
        if opsel and opsel[-1]:
            return lambda c, bits: c.vw(r, (c.vr(r) & U32(0xFFFF)) | (np.asarray(bits, U32) << U32(16)))
        return lambda c, bits: c.vw(r, np.asarray(bits, U32) & U32(0xFFFF))
    return lambda c, bits: c.vw(r, bits)
