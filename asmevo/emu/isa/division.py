"""The IEEE division macro's three instructions: v_div_scale, v_div_fmas, v_div_fixup.

LLVM's correctly rounded fdiv is ``div_scale`` (denominator and numerator),
``v_rcp`` and a Newton-Raphson refinement in FMAs, ``div_fmas`` (the last FMA,
post-scaled by VCC) and ``div_fixup`` (the special cases). Bit-exact quotients
need all three exactly:

* ``v_div_scale_f32`` follows the hardware sweep behind the CDNA3 pseudocode's
  intent (the pseudocode's "1/S1 is a float64 denormal" test and its scaling of
  a huge denominator *up* would break the macro): with ``e1``/``e2`` the raw
  exponent fields of S1 (denominator) and S2 (numerator) and ``d = e2 - e1``,
  VCC = ``|d| >= 96``; zero S1 or S2 gives 0xffc00000; ``d >= 96`` scales S0 by
  2^64 when S0 is S1; a denormal S1 scales S0 by 2^64; ``|S1| > 2^126`` (1/S1 a
  float32 denormal) scales S0 by 2^-64 unless VCC is set and S0 is not S1;
  ``d <= -96`` scales S0 by 2^64 unless S0 is S1; a numerator exponent field
  <= 23 scales S0 by 2^64. S0 equal to neither S1 nor S2 where S0 would be
  scaled down from a small exponent (field < 91; < 219 for f64) is refused
  (the hardware's result there is not ldexp). ``v_div_scale_f64`` is the same structure with the f64
  constants (768, 2^128, 2^1022, 53).
* ``v_div_fmas`` is ``fma(S0, S1, S2)``, times 2^+-64 (2^+-128 for f64) in
  VCC lanes (+ when S2's exponent is above the bias), rounded *once*.
* ``v_div_fixup`` is the ISA pseudocode: NaN operands quieted (S2 first),
  0/0 and inf/inf give the default NaN (0xffc00000 / 0xfff8000000000000 /
  0xfe00), x/0 and inf/y signed infinity, x/inf and 0/y signed zero, an
  exponent difference below -150 (-1075) the signed zero (UNDERFLOW), and
  otherwise the quotient with the sign of S1^S2; a NaN quotient there (an
  intermediate overflow) gives the signed infinity, as hardware does.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import fpmode
from asmevo.emu.numerics import exact as nx
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.errors import UnsupportedInstruction
from asmevo.emu.machine.state import VCC
from asmevo.emu.isa.vsrc import result_writer, source

F16, F32, F64 = np.float16, np.float32, np.float64
U16, U32, U64 = np.uint16, np.uint32, np.uint64

# per format: (mantissa bits, exponent mask, flag threshold, scale, tiny numerator
#              exponent field, default NaN bits, underflow exponent difference)
_FMT = {
    F32: (23, 0xFF, 96, 64, 23, 0xFFC00000, -150),
    F64: (52, 0x7FF, 768, 128, 53, 0xFFF8000000000000, -1075),
    F16: (10, 0x1F, None, None, None, 0xFE00, None),
}
_UINT = {F16: U16, F32: U32, F64: U64}


def _fields(x: np.ndarray):
    dt = x.dtype.type
    mb, emask = _FMT[dt][0], _FMT[dt][1]
    b = x.view(_UINT[dt])
    return ((b >> _UINT[dt](mb)) & _UINT[dt](emask)).astype(np.int64), b


def div_scale(s0, s1, s2):
    """(D, VCC, unmodeled) of v_div_scale for float32 or float64 arrays (module doc);
    ``unmodeled`` marks elements whose hardware result is not known."""
    dt = s0.dtype.type
    mb, emask, big, scale, tiny, nan_bits, _ = _FMT[dt]
    e0, b0 = _fields(s0)
    e1, b1 = _fields(s1)
    e2, b2 = _fields(s2)
    d = e2 - e1
    flag = (d >= big) | (d <= -big)
    same1 = b0 == b1
    with np.errstate(all="ignore"):
        up = nx.ldexp(s0, np.full(s0.shape, scale))
        down = nx.ldexp(s0, np.full(s0.shape, -scale))
        huge1 = np.abs(s1.astype(F64)) > 2.0 ** (emask // 2 - 1)   # 1/S1 is denormal
    zero = (s1 == 0) | (s2 == 0)
    out = s0.copy()
    todo = ~zero
    out[zero] = np.array(nan_bits, _UINT[dt]).view(dt)

    def case(cond, val):
        nonlocal out, todo
        hit = todo & cond
        out = np.where(hit, val, out)
        todo = todo & ~cond
        return hit

    case(d >= big, np.where(same1, up, s0))
    case(e1 == 0, up)
    scaled_down = case(huge1, np.where(flag & ~same1, s0, down))
    case(d <= -big, np.where(same1, s0, up))
    case(e2 <= tiny, up)
    unmodeled = scaled_down & ~flag & ~same1 & (b0 != b2) & (e0 < 2 * scale - 37) & (s0 != 0)
    return out.astype(dt), flag, unmodeled


@register("v_div_scale_f32", "v_div_scale_f64")
def _div_scale(ins: Insn) -> Decoded:
    f64 = ins.base.endswith("f64")
    t = "f64" if f64 else "f32"
    width = 64 if f64 else 32
    if ins.ops[1].kind != "s":
        raise ins.fail(f"lane-mask destination {ins.ops[1].text}")
    sdst = ins.ops[1].reg
    readers = [source(ins, ins.ops[2 + i], t, i) for i in range(3)]
    write = result_writer(ins, ins.ops[0], t)
    ftz = nx.ftz64 if f64 else nx.ftz32

    def run(c):
        mode = fpmode.mode_of(c, ins.mnemonic)
        fpmode.check_round(c, mode, width, ins.mnemonic)
        s = [np.broadcast_to(r(c), (c.w, 64)) for r in readers]
        if fpmode.flush_bits(mode, width)[0]:
            s = [ftz(x) for x in s]
        res, vcc, unmodeled = div_scale(*s)
        if (unmodeled & c.exec_mask()).any():
            raise UnsupportedInstruction(ins.mnemonic, c.kernel, c.address,
                                         "S0 is neither numerator nor denominator and would be "
                                         "scaled down from a small exponent (not specified)")
        if fpmode.flush_bits(mode, width)[1]:
            res = ftz(res)
        write(c, res.view(U64 if f64 else U32))
        c.lane_mask_write(sdst, vcc)
    return op(run)


@register("v_div_fmas_f32", "v_div_fmas_f64")
def _div_fmas(ins: Insn) -> Decoded:
    f64 = ins.base.endswith("f64")
    t = "f64" if f64 else "f32"
    width = 64 if f64 else 32
    readers = [source(ins, ins.ops[1 + i], t, i) for i in range(3)]
    write = result_writer(ins, ins.ops[0], t)
    fma = nx.fma64 if f64 else nx.fma32
    bias, k = (1023, 128) if f64 else (127, 64)
    ftz = nx.ftz64 if f64 else nx.ftz32
    clamp = bool(ins.mods.get("clamp"))
    if "mul" in ins.mods or "div" in ins.mods:
        raise ins.fail("output modifier on v_div_fmas")

    def run(c):
        mode = fpmode.mode_of(c, ins.mnemonic)
        fpmode.check_round(c, mode, width, ins.mnemonic)
        a, b, s2 = (np.broadcast_to(r(c), (c.w, 64)) for r in readers)
        fin, fout = fpmode.flush_bits(mode, width)
        if fin:
            a, b, s2 = ftz(a), ftz(b), ftz(s2)
        vcc = c.lane_mask_read(VCC)
        r = fma(a, b, s2)
        if vcc.any():
            e2 = _fields(np.ascontiguousarray(s2))[0]
            upl = vcc & (e2 > bias)
            dnl = vcc & ~(e2 > bias)
            if upl.any():
                r = np.where(upl, fma(a, b, s2, k), r)
            if dnl.any():
                r = np.where(dnl, fma(a, b, s2, -k), r)
        if clamp:
            r = nx.clamp01(r, fpmode.dx10(mode))
        if fout:
            r = ftz(r)
        write(c, np.asarray(r, F64 if f64 else F32).view(U64 if f64 else U32))
    return op(run)


def fixup(q, d, n):
    """v_div_fixup(S0 = quotient q, S1 = denominator d, S2 = numerator n)."""
    dt = q.dtype.type
    _, _, _, _, _, nan_bits, under = _FMT[dt]
    q, d, n = np.broadcast_arrays(q, d, n)
    sign = np.signbit(d) ^ np.signbit(n)
    inf, zero = dt(np.inf), dt(0)
    with np.errstate(all="ignore"):
        signed = lambda x: np.where(sign, -x, x)
        r = signed(np.abs(q))
        r = np.where(np.isnan(q), signed(inf), r)       # overflowed estimate
        if under is not None:
            e1, _ = _fields(np.ascontiguousarray(d))
            e2, _ = _fields(np.ascontiguousarray(n))
            r = np.where(e2 - e1 < under, signed(zero), r)
        r = np.where(np.isinf(d) | (n == 0), signed(zero), r)
        r = np.where((d == 0) | np.isinf(n), signed(inf), r)
        default_nan = np.array(nan_bits, _UINT[dt]).view(dt)
        r = np.where(((d == 0) & (n == 0)) | (np.isinf(d) & np.isinf(n)), default_nan, r)
        r = np.where(np.isnan(d), fpmode.quiet(d), r)
        r = np.where(np.isnan(n), fpmode.quiet(n), r)
    return r.astype(dt)
