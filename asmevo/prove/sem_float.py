"""Float rows: IEEE-754 terms, and what MODE and the NaN rule add around them.

:data:`FLOAT` gives the float rows of :data:`asmevo.emu.isa.valu.OPS` whose hardware
result is exact (correctly rounded, or no rounding at all) functions over terms
(:data:`FLOAT_FNS`; their types are the emulator's). A row function takes
its sources' bits and returns either a FloatingPoint term (rounded to nearest
even; :func:`compute` gives it its bits and its NaN) or bits (min/max, which pick
an operand; conversions to integers). :func:`compute` is the emulator's
``_FloatSpec.compute``: MODE's rounding (only nearest-even is modeled: other
modes are refused), denormal flushing of sources and result, the IEEE bit (clear,
a signalling NaN source aborts the run as the emulator refuses it: a condition both
versions must share, like a fault), the NaN rule, clamp and output modifiers.

The NaN rule (:mod:`asmevo.emu.numerics.approx`): a NaN made from non-NaN operands is the
default NaN; one NaN operand comes back quieted; with two or more, which one is a
member of the instruction's family (the emulator's variant 0 takes the first): an
uninterpreted function of the operands' bits, so a proof holds for every member,
and the emulator check evaluates it as variant 0.
"""
from __future__ import annotations

from asmevo.emu.numerics.fpmode import flush_bits, round_field
from asmevo.emu.isa.valu import IEEE_NAN_RULES, OPS, ROUND_FREE
from asmevo.prove.errors import Unsupported
from asmevo.prove.term import (DEFAULT_NAN, FORMATS, RNE, bv, cat, fp_bits, fsort, ftz,
                               is_nan, is_snan, quiet, sign_of, to_fp)
from asmevo.prove.z3env import z3

NANPICK_PREFIX = "nanpick:"


def _fp2(op):
    return lambda a, b: op(RNE, to_fp(a), to_fp(b))


def _mul_legacy(a, b):
    fa, fb = to_fp(a), to_fp(b)
    return z3.If(z3.Or(z3.fpIsZero(fa), z3.fpIsZero(fb)), z3.FPVal(0.0, fsort(32)),
                 z3.fpMul(RNE, fa, fb))


def _fma(a, b, c):
    return z3.fpFMA(RNE, to_fp(a), to_fp(b), to_fp(c))


def _round(mode):
    return lambda a: z3.fpRoundToIntegral(mode, to_fp(a))


def fmax(a, b, ieee: bool = True):
    """V_MAX on bits (numerics.fmax): a NaN gives the other operand, a signalling NaN
    (IEEE mode) itself quieted; +0 > -0."""
    fa, fb = to_fp(a), to_fp(b)
    r = z3.If(z3.fpGT(fa, fb), a, b)
    r = z3.If(z3.And(z3.fpIsZero(fa), z3.fpIsZero(fb)), z3.If(sign_of(a), b, a), r)
    return _nan_rules(a, b, r, ieee)


def fmin(a, b, ieee: bool = True):
    fa, fb = to_fp(a), to_fp(b)
    r = z3.If(z3.fpLT(fa, fb), a, b)
    r = z3.If(z3.And(z3.fpIsZero(fa), z3.fpIsZero(fb)), z3.If(sign_of(a), a, b), r)
    return _nan_rules(a, b, r, ieee)


def _nan_rules(a, b, r, ieee: bool):
    r = z3.If(is_nan(b), a, r)
    r = z3.If(is_nan(a), b, r)
    if ieee:
        r = z3.If(is_snan(b), quiet(b), r)
        r = z3.If(is_snan(a), quiet(a), r)
    return r


def fmax3(a, b, c, ieee=True):
    return fmax(fmax(a, b, ieee), c, ieee)


def fmin3(a, b, c, ieee=True):
    return fmin(fmin(a, b, ieee), c, ieee)


def fmed3(a, b, c, ieee=True):
    mx = fmax3(a, b, c, ieee)
    fmx = to_fp(mx)
    r = z3.If(z3.fpEQ(fmx, to_fp(a)), fmax(b, c, ieee),
              z3.If(z3.fpEQ(fmx, to_fp(b)), fmax(a, c, ieee), fmax(a, b, ieee)))
    return z3.If(z3.Or(is_nan(a), is_nan(b), is_nan(c)), fmin3(a, b, c, ieee), r)


def _to_float(w: int, signed: bool):
    conv = z3.fpSignedToFP if signed else z3.fpUnsignedToFP
    return lambda a: conv(RNE, a, fsort(w))


def _cvt(w: int):
    return lambda a: z3.fpFPToFP(RNE, to_fp(a), fsort(w))


def f2i(x_fp, lo: int, hi: int, out_w: int):
    """Float to integer (numerics.f2i): truncate, clamp to [lo, hi], NaN -> 0."""
    t = z3.fpFPToFP(RNE, z3.fpRoundToIntegral(z3.RTZ(), x_fp), z3.Float64())
    lo_f, hi_f = z3.FPVal(float(lo), z3.Float64()), z3.FPVal(float(hi), z3.Float64())
    val = z3.fpToSBV(z3.RTZ(), t, z3.BitVecSort(64))
    r = z3.If(z3.fpLT(t, lo_f), bv(lo, 64), z3.If(z3.fpGT(t, hi_f), bv(hi, 64), val))
    return z3.Extract(out_w - 1, 0, z3.If(z3.fpIsNaN(x_fp), bv(0, 64), r))


def _f2i(lo: int, hi: int, out_w: int, pre=None):
    def fn(a):
        x = to_fp(a)
        return f2i(pre(x) if pre else x, lo, hi, out_w)
    return fn


def _rpi(x):            # floor(x + 0.5), the sum in float64 (exact where it matters)
    x64 = z3.fpFPToFP(RNE, x, z3.Float64())
    s = z3.fpAdd(RNE, x64, z3.FPVal(0.5, z3.Float64()))
    return z3.fpRoundToIntegral(z3.RTN(), s)


def _ubyte(k: int):
    return lambda a: z3.fpUnsignedToFP(RNE, z3.Extract(8 * k + 7, 8 * k, a), fsort(32))


def _half_bits_rtz(a):
    """f32 -> f16 bits rounded toward zero, NaNs as numpy converts them (sign, the
    mantissa's top 10 bits, never an infinity; not quieted)."""
    fa = to_fp(a)
    h = z3.fpToIEEEBV(z3.fpFPToFP(z3.RTZ(), fa, fsort(16)))
    nan = z3.Concat(z3.Extract(31, 31, a), bv(0x1F, 5), z3.Extract(22, 13, a))
    nan = z3.If(z3.Extract(9, 0, nan) == 0, nan | bv(1, 16), nan)
    return z3.If(z3.fpIsNaN(fa), nan, h)


FLOAT_FNS: dict[str, object] = {
    "v_mul_legacy_f32": _mul_legacy,
    "v_fmamk_f32": _fma,
    "v_fmaak_f32": _fma,
    "v_cvt_f32_i32": _to_float(32, True),
    "v_cvt_f32_u32": _to_float(32, False),
    "v_cvt_i32_f32": _f2i(-2**31, 2**31 - 1, 32),
    "v_cvt_u32_f32": _f2i(0, 2**32 - 1, 32),
    "v_cvt_rpi_i32_f32": _f2i(-2**31, 2**31 - 1, 32, _rpi),
    "v_cvt_flr_i32_f32": _f2i(-2**31, 2**31 - 1, 32,
    lambda x: z3.fpRoundToIntegral(z3.RTN(), x)),
    "v_cvt_f16_f32": _cvt(16),
    "v_cvt_f32_f16": _cvt(32),
    "v_cvt_f64_f32": _cvt(64),
    "v_cvt_f32_f64": _cvt(32),
    "v_cvt_f64_i32": _to_float(64, True),
    "v_cvt_f64_u32": _to_float(64, False),
    "v_cvt_i32_f64": _f2i(-2**31, 2**31 - 1, 32),
    "v_cvt_u32_f64": _f2i(0, 2**32 - 1, 32),
    "v_cvt_f32_ubyte0": _ubyte(0),
    "v_cvt_f32_ubyte1": _ubyte(1),
    "v_cvt_f32_ubyte2": _ubyte(2),
    "v_cvt_f32_ubyte3": _ubyte(3),
    "v_cvt_f16_u16": _to_float(16, False),
    "v_cvt_f16_i16": _to_float(16, True),
    "v_cvt_u16_f16": _f2i(0, 0xFFFF, 16),
    "v_cvt_i16_f16": _f2i(-0x8000, 0x7FFF, 16),
    "v_cvt_pkrtz_f16_f32": lambda a, b: cat(_half_bits_rtz(b), _half_bits_rtz(a)),
    "v_pack_b32_f16": lambda a, b: cat(b, a),
}
for _w in (16, 32, 64):       # the rows every format has (those OPS holds for it)
    for _name, _fn in (("add", _fp2(z3.fpAdd)), ("sub", _fp2(z3.fpSub)),
                       ("subrev", lambda a, b: z3.fpSub(RNE, to_fp(b), to_fp(a))),
                       ("mul", _fp2(z3.fpMul)), ("min", fmin), ("max", fmax), ("min3", fmin3),
                       ("max3", fmax3), ("med3", fmed3), ("fma", _fma),
                       ("trunc", _round(z3.RTZ())), ("floor", _round(z3.RTN())),
                       ("ceil", _round(z3.RTP())), ("rndne", _round(RNE))):
        if f"v_{_name}_f{_w}" in OPS:
            FLOAT_FNS[f"v_{_name}_f{_w}"] = _fn
FLOAT: dict[str, tuple] = {name: (OPS[name][0], OPS[name][1], fn)
                        for name, fn in FLOAT_FNS.items()}


def compute(m, ins, name: str, dst_t: str, src_ts: tuple, fn, args: list):
    """The row's result bits with MODE, the NaN rule, clamp and flushing applied."""
    mode = m.ctx.mode
    is_float = dst_t[0] == "f"
    out_w = int(dst_t[1:])
    fsrcs = [i for i, t in enumerate(src_ts) if t[0] == "f"]
    in_w = int(src_ts[fsrcs[0]][1:]) if fsrcs else out_w
    minmax = name in IEEE_NAN_RULES
    if is_float and name not in ROUND_FREE and round_field(mode, out_w):
        raise Unsupported(ins.text, "MODE selects a rounding other than nearest even")
    if ("mul" in ins.mods or "div" in ins.mods) and not m.ctx.ieee:
        raise Unsupported(ins.text, "output modifier with MODE.IEEE clear")
    fin, fout = flush_bits(mode, in_w)
    args = list(args)
    if fin:
        for i in fsrcs:
            args[i] = ftz(args[i])
    if not m.ctx.ieee and not minmax and fsrcs:
        # the emulator refuses a signalling NaN source with MODE.IEEE clear (the ISA
        # leaves it open): like a fault, a condition the two versions must share
        m.fault(z3.And(m.active(), z3.Or(*[is_snan(args[i]) for i in fsrcs])))
    res = fn(*args, ieee=m.ctx.ieee) if minmax else fn(*args)
    if not is_float:
        return res
    if z3.is_fp(res):
        same = [args[i] for i in fsrcs if int(src_ts[i][1:]) == out_w]
        nan = nan_bits(m, name, same, out_w) if len(same) == len(fsrcs) else \
            _converted_nan([args[i] for i in fsrcs], out_w)
        res = fp_bits(res, nan)
    if ins.mods.get("clamp"):
        res = clamp01(res, m.ctx.dx10)
    if not minmax and flush_bits(mode, out_w)[1]:
        res = ftz(res)
    return res


def nan_bits(m, name: str, srcs: list, w: int):
    """The NaN an arithmetic row returns where its result is a NaN (approx.nan_rule)."""
    out = bv(DEFAULT_NAN[w], w)
    for x in reversed(srcs):
        out = z3.If(is_nan(x), quiet(x), out)
    if len(srcs) >= 2:
        count = sum((z3.If(is_nan(x), bv(1, 2), bv(0, 2)) for x in srcs), bv(0, 2))
        many = z3.UGE(count, 2) if len(srcs) < 4 else z3.Or(
            *[z3.And(is_nan(a), is_nan(b)) for i, a in enumerate(srcs) for b in srcs[i + 1:]])
        pick = m.ctx.uf(f"{NANPICK_PREFIX}{name}", tuple(z3.BitVecSort(w) for _ in srcs),
                        z3.BitVecSort(w), kind="nanpick")
        out = z3.If(many, pick(*srcs), out)
    return out


def nanpick_variant0(args: list[int], w: int) -> int:
    """The emulator's variant-0 choice among NaN operands: the first, quieted."""
    e, mbits = FORMATS[w]
    for x in args:
        if (x >> mbits) & ((1 << e) - 1) == (1 << e) - 1 and x & ((1 << mbits) - 1):
            return x | (1 << (mbits - 1))
    return DEFAULT_NAN[w]


def _converted_nan(srcs: list, w: int):
    """A conversion's NaN (approx.convert_nan): sign kept, payload truncated or widened,
    quieted."""
    x = srcs[0]
    sw = x.size()
    ms, md = FORMATS[sw][1], FORMATS[w][1]
    mant = z3.Extract(ms - 1, 0, x)
    mant = z3.Extract(ms - 1, ms - md, mant) if md < ms else cat(mant, bv(0, md - ms))
    e = FORMATS[w][0]
    out = cat(z3.Extract(sw - 1, sw - 1, x), cat(bv(-1, e), mant)) | bv(1 << (md - 1), w)
    return out if len(srcs) == 1 else quiet(out)


def clamp01(x, dx10: bool):
    """The float clamp modifier (numerics.clamp01): [0, 1], -0 -> +0, NaN -> +0 with
    DX10_CLAMP, else kept."""
    w = x.size()
    fx = to_fp(x)
    one = z3.fpToIEEEBV(z3.FPVal(1.0, fsort(w)))
    r = z3.If(z3.Or(z3.fpLT(fx, z3.FPVal(0.0, fsort(w))), z3.fpIsZero(fx)), bv(0, w),
              z3.If(z3.fpGT(fx, z3.FPVal(1.0, fsort(w))), one, x))
    return z3.If(is_nan(x), bv(0, w) if dx10 else x, r)
