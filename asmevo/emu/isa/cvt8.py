"""FP8/BF8 and 4-bit conversions of gfx940/gfx942 (CDNA3 ISA, chapter 12.11 and
Table 31 "8-bit format conversions").

- ``v_cvt_pk_{fp8,bf8}_f32 D, S0, S1 [op_sel:[0,0,h]]``: two f32 values to two
  FNUZ bytes, ``{cvt(S1), cvt(S0)}`` into D[15:0] (h=0) or D[31:16] (h=1); the
  other half of D is preserved. NEG/ABS apply to the sources; CLAMP and OMOD
  do not exist for it; sources must be VGPRs (the guide allows no SGPR or
  constant). Rounding is to nearest even whatever MODE says; overflow follows
  MODE.FP16_OVFL (see :mod:`asmevo.emu.numerics.fp8`).
- ``v_cvt_f32_{fp8,bf8}`` (VOP1/SDWA/VOP3): one byte, chosen by SDWA
  src0_sel BYTE_0..3 (BYTE_0 without SDWA), to f32; ``v_cvt_pk_f32_{fp8,bf8}``:
  the two bytes of the word chosen by src0_sel WORD_0/WORD_1 to D, D+1. The
  guide says these ignore ABS, NEG, SEXT and every SDWA field but src0_sel.
- ``v_cvt_off_f32_i4``: the signed low nibble of S0 in sixteenths
  (-8/16 .. 7/16), through the ordinary VOP1/SDWA/VOP3 machinery.

The stochastic-rounding forms ``v_cvt_sr_{fp8,bf8}_f32`` stay refused: the
guide's pseudocode adds S1[31:12] to the mantissa "wrapping around on
overflow" and then converts, while its prose says the sum is truncated with a
carry into the exponent; the two disagree for mantissas that overflow.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import fp8, fpmode
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader
from asmevo.emu.isa.vsrc import result_writer, sdwa_select, source

U32 = np.uint32
FP16_OVFL_BIT = 23


def fp16_ovfl(c) -> bool:
    """MODE.FP16_OVFL (bit 23) of the batch's waves (MODE is per wave: numerics.fpmode)."""
    return bool((fpmode.mode_of(c, "fp8 conversion") >> FP16_OVFL_BIT) & 1)


def _plain_vop3(ins: Insn, what: str) -> None:
    for key in ("clamp", "mul", "div"):
        if key in ins.mods:
            raise ins.fail(f"{key} on {what}")


@register("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32")
def _cvt_pk_to8(ins: Insn) -> Decoded:
    fmt = "fp8" if "fp8" in ins.base else "bf8"
    if ins.encoding not in ("", "e64"):
        raise ins.fail(f"{ins.encoding} encoding")
    _plain_vop3(ins, ins.base)
    opsel = list(ins.mods.get("op_sel", [0, 0, 0])) + [0, 0, 0]
    if opsel[0] or opsel[1]:
        raise ins.fail("op_sel on an f32 source")
    hi = bool(opsel[2])
    dst, s0, s1 = ins.ops[0], ins.ops[1], ins.ops[2]
    if dst.kind != "v" or s0.kind != "v" or s1.kind != "v":
        raise ins.fail("operands must be VGPRs")
    r0, r1 = source(ins, s0, "f32", 0), source(ins, s1, "f32", 1)
    d = dst.reg
    keep = U32(0x0000FFFF if hi else 0xFFFF0000)
    shift = U32(16 if hi else 0)

    def run(c):
        mode = fpmode.mode_of(c, ins.base)
        fpmode.check_round(c, mode, 32, ins.base)     # RNE is all that is modeled
        ovfl = bool((mode >> FP16_OVFL_BIT) & 1)
        lo = fp8.encode_rne(r0(c), fmt, ovfl)
        hi_b = fp8.encode_rne(r1(c), fmt, ovfl)
        pair = (lo | (hi_b << U32(8))) << shift
        c.vw(d, (c.vr(d) & keep) | pair)
    return op(run)


@register("v_cvt_sr_fp8_f32", "v_cvt_sr_bf8_f32")
def _cvt_sr(ins: Insn) -> Decoded:
    raise ins.fail("stochastic rounding: the ISA guide's pseudocode (mantissa sum wraps) and "
                   "prose (sum carries, then truncates) disagree")


_BYTE_SEL = {"DWORD": 0, "BYTE_0": 0, "BYTE_1": 1, "BYTE_2": 2, "BYTE_3": 3}
_WORD_SEL = {"DWORD": 0, "WORD_0": 0, "WORD_1": 1}


def _src0_select(ins: Insn, table: dict[str, int]) -> int:
    if ins.encoding == "dpp":
        raise ins.fail("DPP encoding")
    if ins.encoding == "e64":
        _plain_vop3(ins, ins.base)
        if ins.mods.get("op_sel"):
            raise ins.fail("op_sel (VOP3 byte select)")
        return 0
    if ins.encoding != "sdwa":
        return 0
    sel = str(ins.mods.get("src0_sel", "DWORD"))
    if sel not in table:
        raise ins.fail(f"src0_sel:{sel}")
    return table[sel]


@register("v_cvt_f32_fp8", "v_cvt_f32_bf8")
def _cvt_f32_from8(ins: Insn) -> Decoded:
    fmt = "fp8" if ins.base.endswith("fp8") else "bf8"
    byte = _src0_select(ins, _BYTE_SEL)
    if ins.ops[0].kind != "v":
        raise ins.fail("destination must be a VGPR")
    rd = raw_reader(ins.ops[1], 32, True)
    d = ins.ops[0].reg
    sh = U32(8 * byte)

    def run(c):
        codes = (np.broadcast_to(rd(c), (c.w, 64)) >> sh) & U32(0xFF)
        c.vw(d, fp8.decode_f32_bits(codes, fmt))
    return op(run)


@register("v_cvt_pk_f32_fp8", "v_cvt_pk_f32_bf8")
def _cvt_pk_f32_from8(ins: Insn) -> Decoded:
    fmt = "fp8" if ins.base.endswith("fp8") else "bf8"
    word = _src0_select(ins, _WORD_SEL)
    dst = ins.ops[0]
    if dst.kind != "v" or dst.count != 2 or dst.reg % 2:
        raise ins.fail("destination must be an even-aligned VGPR pair")
    rd = raw_reader(ins.ops[1], 32, True)
    d = dst.reg
    sh = U32(16 * word)

    def run(c):
        w = np.broadcast_to(rd(c), (c.w, 64)) >> sh
        c.vw(d, fp8.decode_f32_bits(w & U32(0xFF), fmt))
        c.vw(d + 1, fp8.decode_f32_bits((w >> U32(8)) & U32(0xFF), fmt))
    return op(run)


_OFF_I4 = np.array([(i - 16 if i >= 8 else i) / 16.0 for i in range(16)],
                   np.float32).view(U32)


@register("v_cvt_off_f32_i4")
def _cvt_off_f32_i4(ins: Insn) -> Decoded:
    if ins.encoding == "dpp":
        raise ins.fail("DPP encoding")
    if ins.encoding == "e64":
        _plain_vop3(ins, ins.base)
    if ins.encoding == "sdwa":
        sel = str(ins.mods.get("src0_sel", "DWORD"))
        raw = raw_reader(ins.ops[1], 32, True)
        rd = lambda c: sdwa_select(raw(c), sel, False)  # noqa: E731 - sext cannot matter
    else:
        rd = source(ins, ins.ops[1], "u32", 0)
    write = result_writer(ins, ins.ops[0], "b32")

    def run(c):
        nib = (np.broadcast_to(rd(c), (c.w, 64)).astype(U32)) & U32(15)
        write(c, _OFF_I4[nib])
    return op(run)
