"""Packed math (VOP3P): v_pk_*_f16/u16/i16 on register halves, the gfx90a+ packed
f32 ops on register pairs (v_pk_add/mul/fma_f32, v_pk_mov_b32), and dot products.

op_sel picks the half each source gives the low result, op_sel_hi the half it
gives the high result (default: low->low, high->high); neg_lo/neg_hi negate
per result half.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import approx, fpmode
from asmevo.emu.isa import native
from asmevo.emu.numerics import exact as nx
from asmevo.emu.errors import UnsupportedInstruction
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader

U16, U32, U64 = np.uint16, np.uint32, np.uint64
F16, F32 = np.float16, np.float32


def _sel(ins: Insn, n: int):
    opsel = list(ins.mods.get("op_sel", [0] * n)) + [0] * n
    opsel_hi = list(ins.mods.get("op_sel_hi", [1] * n)) + [1] * n
    neg_lo = list(ins.mods.get("neg_lo", [0] * n)) + [0] * n
    neg_hi = list(ins.mods.get("neg_hi", [0] * n)) + [0] * n
    return opsel[:n], opsel_hi[:n], neg_lo[:n], neg_hi[:n]


# -- packed f32 on register pairs ---------------------------------------------------
PK32 = {
    "v_pk_add_f32": (2, lambda a, b: a + b),
    "v_pk_mul_f32": (2, lambda a, b: a * b),
    "v_pk_fma_f32": (3, nx.fma32),
}


def _half32(raw64, hi: bool):
    return ((raw64 >> U64(32)) if hi else raw64 & U64(0xFFFFFFFF)).astype(U32)


def _pair_halves(lo_reg: int, hi_reg: int):
    """A VGPR-pair source's (op_sel, op_sel_hi) halves as uint32: registers ``lo_reg``
    and ``hi_reg`` (views; nothing writes them before the result is computed)."""
    return lambda c: (c.vr(lo_reg), c.vr(hi_reg))


def _split_halves(r64, sel: bool, sel_hi: bool):
    """The (op_sel, op_sel_hi) halves of a 64-bit source read by ``r64``."""
    def read(c):
        x = r64(c)
        return _half32(x, sel), _half32(x, sel_hi)
    return read


@register(*PK32)
def _pk32(ins: Insn) -> Decoded:
    n, fn = PK32[ins.base]
    opsel, opsel_hi, neg_lo, neg_hi = _sel(ins, n)
    dst = ins.ops[0].reg
    readers = []
    for i, o in enumerate(ins.ops[1:1 + n]):
        if o.kind == "v":
            # a VGPR pair's halves are its two registers: read each as it is (the
            # uint64 of the pair, split again, gives the same bits)
            readers.append(_pair_halves(o.reg + bool(opsel[i]), o.reg + bool(opsel_hi[i])))
            continue
        if o.kind == "const":
            r32 = raw_reader(o, 32, True)
            r64 = lambda c, r32=r32: r32(c).astype(U64) | (r32(c).astype(U64) << U64(32))
        else:
            r64 = raw_reader(o, 64, True)
        readers.append(_split_halves(r64, bool(opsel[i]), bool(opsel_hi[i])))
    sign = U32(0x80000000)
    clamp = bool(ins.mods.get("clamp"))
    key = approx.opcode_key(ins.base)
    fast = None if clamp else native.ROWS[ins.base]    # asmevo.emu.isa.native's operation

    def run(c):
        mode = fpmode.mode_of(c, ins.mnemonic)
        fpmode.check_round(c, mode, 32, ins.mnemonic)
        fin, fout = fpmode.flush_bits(mode, 32)
        # the launch's approx_variant is only the NaN choice here: waves of several
        # members at once (asmevo.emu.run.batch) get each wave's member's choice
        members = c.members
        variant = 0 if members is not None else c.approx_variant
        halves = [r(c) for r in readers]
        lo = []
        hi = []
        for i, (a, b) in enumerate(halves):
            if neg_lo[i]:
                a = a ^ sign
            if neg_hi[i]:
                b = b ^ sign
            lo.append(nx.ftz32(a.view(F32)) if fin else a.view(F32))
            hi.append(nx.ftz32(b.view(F32)) if fin else b.view(F32))
        out = []
        lib = native.library() if fast is not None and not fout else None
        for args in (lo, hi):
            r = None if lib is None else native.arith(lib, fast, args, variant, members, key)
            if r is not None:           # no clamp, no output flush (fast, fout)
                out.append(r)
                continue
            with np.errstate(all="ignore"):
                r = np.asarray(fn(*args), F32)
                r = approx.nan_result(r, args, variant, key) if members is None else \
                    approx.nan_by_member(r, args, members, key, None)
            if clamp:
                r = nx.clamp01(r, fpmode.dx10(mode))
            out.append(nx.ftz32(r) if fout else r)
        c.vw(dst, np.broadcast_to(out[0].view(U32), (c.w, 64)))
        c.vw(dst + 1, np.broadcast_to(out[1].view(U32), (c.w, 64)))
    fused = None if fast is None or any(neg_lo) or any(neg_hi) else \
        _pk32_on_registers(ins, n, fast, key, opsel, opsel_hi, run)
    return op(fused or run)


def _pk32_on_registers(ins: Insn, n: int, fast: int, key: int, opsel, opsel_hi, run):
    """A packed float32 row of VGPR pairs without modifiers, each half a row straight on
    the register file (asmevo.emu.isa.native.regs), the low half first; ``run`` (the numpy
    row) where the mode asks for more or the library is not there. None where a source
    is not a VGPR pair, or the low half writes a register the high half reads."""
    srcs, dst = ins.ops[1:1 + n], ins.ops[0].reg
    if any(o.kind != "v" for o in srcs):
        return None
    lo_regs = tuple(o.reg + bool(opsel[i]) for i, o in enumerate(srcs))
    hi_regs = tuple(o.reg + bool(opsel_hi[i]) for i, o in enumerate(srcs))
    if dst in hi_regs:
        return None
    kinds = (0,) * n

    def fused(c):
        mode = fpmode.mode_of(c, ins.mnemonic)
        fpmode.check_round(c, mode, 32, ins.mnemonic)
        lib = native.library()
        if lib is not None and fpmode.flush_bits(mode, 32) == (False, False):
            members = c.members
            variant = 0 if members is not None else c.approx_variant
            if native.regs(lib, fast, c, kinds, lo_regs, dst, variant, members, key):
                native.regs(lib, fast, c, kinds, hi_regs, dst + 1, variant, members, key)
                return
        run(c)
    return fused


@register("v_pk_mov_b32")
def _pkmov(ins: Insn) -> Decoded:
    dst = ins.ops[0].reg
    r0, r1 = raw_reader(ins.ops[1], 64, True), raw_reader(ins.ops[2], 64, True)
    opsel = list(ins.mods.get("op_sel", [0, 0])) + [0, 0]

    def run(c):
        a, b = r0(c), r1(c)
        lo = _half32(a, bool(opsel[0]))
        hi = _half32(b, bool(opsel[1]))
        c.vw(dst, np.broadcast_to(lo, (c.w, 64)))
        c.vw(dst + 1, np.broadcast_to(hi, (c.w, 64)))
    return op(run, variant=True)


# -- packed 16-bit -------------------------------------------------------------------
PK16 = {  # name: (sources, type, fn)
    "v_pk_add_f16": (2, "f", lambda a, b: a + b),
    "v_pk_mul_f16": (2, "f", lambda a, b: a * b),
    "v_pk_fma_f16": (3, "f", nx.fma16),
    "v_pk_max_f16": (2, "f", nx.fmax),
    "v_pk_min_f16": (2, "f", nx.fmin),
    "v_pk_add_u16": (2, "u", lambda a, b: a + b),
    "v_pk_sub_u16": (2, "u", lambda a, b: a - b),
    "v_pk_add_i16": (2, "i", lambda a, b: a + b),
    "v_pk_sub_i16": (2, "i", lambda a, b: a - b),
    "v_pk_mul_lo_u16": (2, "u", lambda a, b: a * b),
    "v_pk_max_i16": (2, "i", np.maximum),
    "v_pk_min_i16": (2, "i", np.minimum),
    "v_pk_max_u16": (2, "u", np.maximum),
    "v_pk_min_u16": (2, "u", np.minimum),
    "v_pk_lshlrev_b16": (2, "u", lambda a, b: b << (a & U16(15))),
    "v_pk_lshrrev_b16": (2, "u", lambda a, b: b >> (a & U16(15))),
    "v_pk_ashrrev_i16": (2, "ui", lambda a, b: b >> (a.view(np.int16) & 15)),
    "v_pk_mad_u16": (3, "u", lambda a, b, c: a * b + c),
    "v_pk_mad_i16": (3, "i", lambda a, b, c: a * b + c),
}


def _h16(raw, hi: bool, neg: bool, kind: str):
    x = ((raw >> U32(16)) if hi else raw) & U32(0xFFFF)
    if neg and kind == "f":
        x = x ^ U32(0x8000)
    x = x.astype(U16)
    return x.view(F16) if kind == "f" else (x.view(np.int16) if kind == "i" else x)


@register(*PK16)
def _pk16(ins: Insn) -> Decoded:
    n, kind, fn = PK16[ins.base]
    opsel, opsel_hi, neg_lo, neg_hi = _sel(ins, n)
    dst = ins.ops[0].reg
    readers = []
    for o in ins.ops[1:1 + n]:
        readers.append(raw_reader(o, 16 if o.kind == "const" else 32, True))
    k = "f" if kind == "f" else ("i" if kind == "i" else "u")
    if kind == "ui":
        k = "u"
    clamp = bool(ins.mods.get("clamp"))
    sat = None
    if clamp and k != "f":
        if ins.base not in PK_SATURATE:
            raise ins.fail("integer clamp")
        sat = (0, 0xFFFF) if k == "u" else (-0x8000, 0x7FFF)
    minmax = ins.base in ("v_pk_max_f16", "v_pk_min_f16")
    key = approx.opcode_key(ins.base)

    def run(c):
        raws = [r(c) for r in readers]
        lo = [_h16(x, bool(opsel[i]), bool(neg_lo[i]), k) for i, x in enumerate(raws)]
        hi = [_h16(x, bool(opsel_hi[i]), bool(neg_hi[i]), k) for i, x in enumerate(raws)]
        if k == "f":
            rlo, rhi = _pk16_float(c, ins, fn, lo, hi, minmax, clamp, key)
            rlo, rhi = rlo.view(U16), rhi.view(U16)
        else:
            with np.errstate(all="ignore"):
                if sat is not None:
                    rlo = np.clip(fn(*[x.astype(np.int64) for x in lo]), *sat)
                    rhi = np.clip(fn(*[x.astype(np.int64) for x in hi]), *sat)
                else:
                    rlo, rhi = np.asarray(fn(*lo)), np.asarray(fn(*hi))
            rlo, rhi = rlo.astype(np.int64).astype(U16), rhi.astype(np.int64).astype(U16)
        out = rlo.astype(U32) | (rhi.astype(U32) << U32(16))
        c.vw(dst, np.broadcast_to(out, (c.w, 64)))
    return op(run, variant=True)


PK_SATURATE = {"v_pk_add_u16", "v_pk_sub_u16", "v_pk_add_i16", "v_pk_sub_i16", "v_pk_mad_u16",
               "v_pk_mad_i16"}


def _pk16_float(c, ins, fn, lo, hi, minmax, clamp, key):
    """Both halves of a packed f16 op with MODE's rules (see asmevo.emu.numerics.fpmode)."""
    mode = fpmode.mode_of(c, ins.mnemonic)
    if not minmax:
        fpmode.check_round(c, mode, 16, ins.mnemonic)
    fin, fout = fpmode.flush_bits(mode, 16)
    ieee = fpmode.ieee(mode)
    variant = c.approx_variant
    out = []
    for args in (lo, hi):
        if fin:
            args = [nx.ftz16(x) for x in args]
        if not ieee and not minmax and fpmode.has_snan(*args, mask=c.mask):
            raise UnsupportedInstruction(ins.mnemonic, c.kernel, c.address, "signalling NaN "
                                         "input with MODE.IEEE clear (not specified)")
        with np.errstate(all="ignore"):
            if minmax:
                r = np.asarray(fn(*args, ieee=ieee), F16)
            else:
                r = approx.nan_result(np.asarray(fn(*args), F16), args, variant, key)
                fpmode.check_f16_overflow(c, mode, r, args, ins.mnemonic)
        if clamp:
            r = nx.clamp01(r, fpmode.dx10(mode))
        if fout and not minmax:
            r = nx.ftz16(r)
        out.append(np.asarray(r, F16))
    return out[0], out[1]


DOT = {  # name: (element type, elements per dword, accumulate type)
    "v_dot2_f32_f16": ("f16", 2, "f32"),
    "v_dot2c_f32_f16": ("f16", 2, "f32"),
    "v_dot2_i32_i16": ("i16", 2, "i32"),
    "v_dot2_u32_u16": ("u16", 2, "u32"),
    "v_dot4_i32_i8": ("i8", 4, "i32"),
    "v_dot4_u32_u8": ("u8", 4, "u32"),
    "v_dot4c_i32_i8": ("i8", 4, "i32"),
    "v_dot8_i32_i4": ("i4", 8, "i32"),
    "v_dot8_u32_u4": ("u4", 8, "u32"),
}


def _elems(raw, et: str, n: int):
    bits = 32 // n
    out = []
    for i in range(n):
        x = ((raw >> U32(bits * i)) & U32((1 << bits) - 1)).astype(np.int64)
        if et == "f16":
            out.append(x.astype(U16).view(F16).astype(np.float64))
        elif et[0] == "i":
            out.append(np.where(x >= (1 << (bits - 1)), x - (1 << bits), x))
        else:
            out.append(x)
    return out


@register(*DOT)
def _dot(ins: Insn) -> Decoded:
    et, n, acc = DOT[ins.base]
    dst = ins.ops[0].reg
    ra, rb = raw_reader(ins.ops[1], 32, True), raw_reader(ins.ops[2], 32, True)
    rc = raw_reader(ins.ops[3] if len(ins.ops) > 3 else ins.ops[0], 32, True)
    clamp = bool(ins.mods.get("clamp"))
    sat = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1)}.get(acc) if clamp else None
    if any(ins.mods.get(m) for m in ("neg_lo", "neg_hi")) and acc != "f32":
        raise ins.fail("neg modifiers on an integer dot product")

    def run(c):
        a, b = _elems(ra(c), et, n), _elems(rb(c), et, n)
        cc = rc(c)
        if acc == "f32":
            res = _dot_f32(c, ins, a, b, cc.view(F32), clamp).view(U32)
        else:
            s = sum(x * y for x, y in zip(a, b)) + (cc.view(np.int32).astype(np.int64)
                                                   if acc == "i32" else cc.astype(np.int64))
            if sat is not None:
                s = np.clip(s, *sat)
            res = (np.asarray(s) & 0xFFFFFFFF).astype(U32)
        c.vw(dst, np.broadcast_to(res, (c.w, 64)))
    return op(run, variant=True)


def _dot_f32(c, ins, a, b, acc, clamp):
    """v_dot2_f32_f16: a member of its family (asmevo.emu.numerics.approx): variant 0 sums the
    exact f16 products and the accumulator in float64 and rounds once; variant >= 1
    is the pseudocode's two float32 additions, each rounded."""
    mode = fpmode.mode_of(c, ins.mnemonic)
    fpmode.check_round(c, mode, 32, ins.mnemonic)
    if fpmode.flush_bits(mode, 16)[0]:
        a = [nx.ftz16(x.astype(F16)).astype(np.float64) for x in a]
        b = [nx.ftz16(x.astype(F16)).astype(np.float64) for x in b]
    if fpmode.flush_bits(mode, 32)[0]:
        acc = nx.ftz32(acc)
    variant = c.approx_variant
    with np.errstate(all="ignore"):
        if variant == 0:
            r = (sum(x * y for x, y in zip(a, b)) + acc.astype(np.float64)).astype(F32)
        else:
            r = acc.astype(F32)
            for x, y in zip(a, b):        # each product is exact in float32
                r = (r + (x * y).astype(F32)).astype(F32)
        r = np.asarray(r, F32)
        nan = np.isnan(r)
        if nan.any():    # a NaN operand propagates quieted; a made NaN is the default NaN
            src = [acc] + [x.astype(F32) for x in a] + [y.astype(F32) for y in b]
            r = approx.nan_result(r, src, variant, approx.opcode_key(ins.base))
    if clamp:
        r = nx.clamp01(r, fpmode.dx10(mode))
    if fpmode.flush_bits(mode, 32)[1]:
        r = nx.ftz32(r)
    return np.asarray(r, F32)


# -- mixed precision FMA ------------------------------------------------------------

@register("v_fma_mix_f32", "v_fma_mixlo_f16", "v_fma_mixhi_f16", "v_mad_mix_f32",
          "v_mad_mixlo_f16", "v_mad_mixhi_f16")
def _fma_mix(ins: Insn) -> Decoded:
    opsel = list(ins.mods.get("op_sel", [0, 0, 0])) + [0, 0, 0]
    opsel_hi = list(ins.mods.get("op_sel_hi", [0, 0, 0])) + [0, 0, 0]
    neg = list(ins.mods.get("neg_lo", [0, 0, 0])) + [0, 0, 0]
    absm = list(ins.mods.get("neg_hi", [0, 0, 0])) + [0, 0, 0]
    dst = ins.ops[0].reg
    srcs = ins.ops[1:4]
    readers = [raw_reader(o, 32, True) for o in srcs]
    f16_src = [bool(opsel_hi[i]) for i in range(3)]
    kind = "f32" if ins.base.endswith("f32") else ("lo" if "mixlo" in ins.base else "hi")
    clamp = bool(ins.mods.get("clamp"))
    for i, o in enumerate(srcs):
        if o.neg:
            neg[i] = 1
        if o.abs:
            absm[i] = 1

    consts = {i: nx.FLOAT_INLINE[o.text] for i, o in enumerate(srcs)
              if o.kind == "const" and o.text in nx.FLOAT_INLINE}

    def value(i, raw):
        if i in consts:        # an inline float constant in the operand's own format
            x = np.float64(consts[i])
        elif f16_src[i]:
            h = ((raw >> U32(16)) if opsel[i] else raw) & U32(0xFFFF)
            x = h.astype(U16).view(F16).astype(np.float64)
        else:
            x = np.asarray(raw, U32).view(F32).astype(np.float64)
        if absm[i]:
            x = np.abs(x)
        if neg[i]:
            x = -x
        return x

    dt = F32 if kind == "f32" else F16
    key = approx.opcode_key(ins.base)

    def run(c):
        mode = fpmode.mode_of(c, ins.mnemonic)
        fpmode.check_round(c, mode, 32 if kind == "f32" else 16, ins.mnemonic)
        vals = []
        for i, r in enumerate(readers):
            x = value(i, r(c))
            if fpmode.flush_bits(mode, 16 if f16_src[i] else 32)[0]:
                x = np.where(np.abs(x) < (2.0 ** -14 if f16_src[i] else 2.0 ** -126),
                             np.copysign(0.0, x), x)
            vals.append(x)
        a, b, cc = vals
        variant = c.approx_variant
        with np.errstate(all="ignore"):
            p = a * b                      # exact: at most 24 x 24 bits
            r = nx.round_sum(np.asarray(p), np.asarray(cc, np.float64), dt)
            r = approx.nan_result(np.asarray(r), [x.astype(dt) for x in vals], variant, key)
        if kind != "f32":
            fpmode.check_f16_overflow(c, mode, r, vals, ins.mnemonic)
        if clamp:
            r = nx.clamp01(np.asarray(r), fpmode.dx10(mode))
        if fpmode.flush_bits(mode, 32 if kind == "f32" else 16)[1]:
            r = (nx.ftz32 if kind == "f32" else nx.ftz16)(np.asarray(r, dt))
        r = np.broadcast_to(r, (c.w, 64))
        if kind == "f32":
            c.vw(dst, r.astype(F32).view(U32))
        else:
            bits = r.astype(F16).view(U16).astype(U32)
            old = c.vr(dst)
            new = (old & U32(0xFFFF0000)) | bits if kind == "lo" else \
                (old & U32(0xFFFF)) | (bits << U32(16))
            c.vw(dst, new)
    return op(run, variant=True)
