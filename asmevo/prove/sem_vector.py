"""Vector integer, bitwise and move instructions, and the lane instructions.

:data:`INT` gives the integer rows of :data:`asmevo.emu.isa.valu.OPS` (their destination
and source types are the emulator's) functions over bit-vectors (:data:`INT_FNS`):
16-bit types are
16-bit terms, 32- and 64-bit ones likewise, and each function gives its result at
the destination's width, wrapping as the emulator's numpy types do; they run
through :mod:`asmevo.prove.valu`'s generic builder, as float rows
(:mod:`asmevo.prove.sem_float`) do.
"""
from __future__ import annotations

from asmevo.emu.isa import valu
from asmevo.emu.isa.valu import OPS
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import Machine
from asmevo.prove.rows import register
from asmevo.prove.term import LANE, at_lane, b2bv, bv, cat, \
    sext, zext
from asmevo.prove.z3env import z3

LSHR, ASHR, ULT, UGT = z3.LShR, (lambda a, b: a >> b), z3.ULT, z3.UGT


def _sh(b, w: int = 32):
    return b & bv(w - 1, b.size())


def _umin(a, b):
    return z3.If(ULT(a, b), a, b)


def _umax(a, b):
    return z3.If(UGT(a, b), a, b)


def _smin(a, b):
    return z3.If(a < b, a, b)


def _smax(a, b):
    return z3.If(a > b, a, b)


def _med3(mn, mx):
    return lambda a, b, c: mx(mn(a, b), mn(mx(a, b), c))


def popcount(x):
    w = x.size()
    return sum((zext(z3.Extract(i, i, x), w) for i in range(w)), bv(0, w))


def _ffbh(x):
    """Leading zeros of a 32-bit value, 0xFFFFFFFF for 0."""
    out = bv(0xFFFFFFFF, 32)
    for i in range(32):         # the highest set bit decides: build from the lowest up
        out = z3.If(z3.Extract(i, i, x) == 1, bv(31 - i, 32), out)
    return out


def _ffbl(x):
    out = bv(0xFFFFFFFF, 32)
    for i in range(31, -1, -1):
        out = z3.If(z3.Extract(i, i, x) == 1, bv(i, 32), out)
    return out


def _ffbh_i(x):
    return _ffbh(z3.If(x < 0, ~x, x))


def _bfrev(x):
    return z3.Concat(*[z3.Extract(i, i, x) for i in range(x.size())])


def _bfe_u(a, b, c):
    off, w = _sh(b), _sh(c)
    return LSHR(a, off) & ((bv(1, 32) << w) - 1)


def _bfe_i(a, b, c):
    off, w = _sh(b), _sh(c)
    x = LSHR(a, off) & ((bv(1, 32) << w) - 1)
    neg = z3.And(w != 0, LSHR(x, w - 1) & 1 == 1)
    return z3.If(neg, x - (bv(1, 32) << w), x)


def _s24(a):
    return sext(z3.Extract(23, 0, a), 64)


def _u24(a):
    return zext(z3.Extract(23, 0, a), 64)


def _perm(a, b, sel):
    data = cat(a, b)
    out = []
    for k in range(4):
        s = z3.Extract(8 * k + 7, 8 * k, sel)
        byte = bv(0xFF, 8)                                  # s >= 13
        byte = z3.If(s == 12, bv(0, 8), byte)
        for code, src in ((8, 1), (9, 3), (10, 5), (11, 7)):
            bit = z3.Extract(8 * src + 7, 8 * src + 7, data)
            byte = z3.If(s == code, z3.If(bit == 1, bv(0xFF, 8), bv(0, 8)), byte)
        for i in range(8):
            byte = z3.If(s == i, z3.Extract(8 * i + 7, 8 * i, data), byte)
        out.append(byte)
    return z3.Concat(*reversed(out))


def _lo(x):
    return z3.Extract(31, 0, x)


def _mulhi_u(a, b):
    return z3.Extract(63, 32, zext(a, 64) * zext(b, 64))


def _mulhi_s(a, b):
    return z3.Extract(63, 32, sext(a, 64) * sext(b, 64))


# name: (dst type, source types, fn)
INT_FNS: dict[str, object] = {
    "v_mov_b32": lambda a: a,
    "v_mov_b64": lambda a: a,
    "v_not_b32": lambda a: ~a,
    "v_bfrev_b32": _bfrev,
    "v_ffbh_u32": _ffbh,
    "v_ffbl_b32": _ffbl,
    "v_ffbh_i32": _ffbh_i,
    "v_and_b32": lambda a, b: a & b,
    "v_or_b32": lambda a, b: a | b,
    "v_xor_b32": lambda a, b: a ^ b,
    "v_xnor_b32": lambda a, b: ~(a ^ b),
    "v_lshlrev_b32": lambda a, b: b << _sh(a),
    "v_lshrrev_b32": lambda a, b: LSHR(b, _sh(a)),
    "v_ashrrev_i32": lambda a, b: b >> _sh(a),
    "v_lshl_b32": lambda a, b: a << _sh(b),
    "v_lshr_b32": lambda a, b: LSHR(a, _sh(b)),
    "v_ashr_i32": lambda a, b: a >> _sh(b),
    "v_lshlrev_b64": lambda a, b: b << zext(a & 63, 64),
    "v_lshrrev_b64": lambda a, b: LSHR(b, zext(a & 63, 64)),
    "v_ashrrev_i64": lambda a, b: b >> zext(a & 63, 64),
    "v_bfe_u32": _bfe_u,
    "v_bfe_i32": _bfe_i,
    "v_bfi_b32": lambda a, b, c: (a & b) | (~a & c),
    "v_bfm_b32": lambda a, b: ((bv(1, 32) << _sh(a)) - 1) << _sh(b),
    "v_alignbit_b32": lambda a, b, c: _lo(LSHR(cat(a, b), zext(_sh(c), 64))),
    "v_alignbyte_b32": lambda a, b, c: _lo(LSHR(cat(a, b), zext(c & 3, 64) * 8)),
    "v_perm_b32": _perm,
    "v_lshl_or_b32": lambda a, b, c: (a << _sh(b)) | c,
    "v_and_or_b32": lambda a, b, c: (a & b) | c,
    "v_or3_b32": lambda a, b, c: a | b | c,
    "v_bcnt_u32_b32": lambda a, b: popcount(a) + b,
    "v_add_u32": lambda a, b: a + b,
    "v_sub_u32": lambda a, b: a - b,
    "v_subrev_u32": lambda a, b: b - a,
    "v_add_i32": lambda a, b: a + b,
    "v_sub_i32": lambda a, b: a - b,
    "v_add3_u32": lambda a, b, c: a + b + c,
    "v_lshl_add_u32": lambda a, b, c: (a << _sh(b)) + c,
    "v_add_lshl_u32": lambda a, b, c: (a + b) << _sh(c),
    "v_xad_u32": lambda a, b, c: (a ^ b) + c,
    "v_lshl_add_u64": lambda a, b, c: (a << zext(b & 7, 64)) + c,
    "v_mul_lo_u32": lambda a, b: a * b,
    "v_mul_hi_u32": _mulhi_u,
    "v_mul_hi_i32": _mulhi_s,
    "v_mul_u32_u24": lambda a, b: (a & 0xFFFFFF) * (b & 0xFFFFFF),
    "v_mul_hi_u32_u24": lambda a, b: z3.Extract(63, 32, _u24(a) * _u24(b)),
    "v_mul_i32_i24": lambda a, b: _lo(_s24(a) * _s24(b)),
    "v_mul_hi_i32_i24": lambda a, b: z3.Extract(63, 32, _s24(a) * _s24(b)),
    "v_mad_u32_u24": lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF) + c,
    "v_mad_i32_i24": lambda a, b, c: _lo(_s24(a) * _s24(b)) + c,
    "v_sad_u32": lambda a, b, c: z3.If(UGT(a, b), a - b, b - a) + c,
    "v_add_u16": lambda a, b: a + b,
    "v_sub_u16": lambda a, b: a - b,
    "v_subrev_u16": lambda a, b: b - a,
    "v_mul_lo_u16": lambda a, b: a * b,
    "v_add_i16": lambda a, b: a + b,
    "v_sub_i16": lambda a, b: a - b,
    "v_mad_u16": lambda a, b, c: a * b + c,
    "v_mad_i16": lambda a, b, c: a * b + c,
    "v_mad_legacy_u16": lambda a, b, c: a * b + c,
    "v_mad_legacy_i16": lambda a, b, c: a * b + c,
    "v_lshlrev_b16": lambda a, b: b << (a & 15),
    "v_lshrrev_b16": lambda a, b: LSHR(b, a & 15),
    "v_ashrrev_i16": lambda a, b: b >> (a & 15),
    "v_cvt_pk_u16_u32": lambda a, b: cat(z3.Extract(15, 0, b), z3.Extract(15, 0, a)),
}
for _t, _mn, _mx in (("i32", _smin, _smax), ("u32", _umin, _umax), ("i16", _smin, _smax),
                     ("u16", _umin, _umax)):
    INT_FNS |= {f"v_min_{_t}": _mn, f"v_max_{_t}": _mx, f"v_med3_{_t}": _med3(_mn, _mx),
                f"v_min3_{_t}": lambda a, b, c, f=_mn: f(f(a, b), c),
                f"v_max3_{_t}": lambda a, b, c, f=_mx: f(f(a, b), c)}
INT: dict[str, tuple] = {name: (OPS[name][0], OPS[name][1], fn)
                      for name, fn in INT_FNS.items()}

# the clamp bit of these saturates: name -> (lowest, highest, signed sources, exact fn)
_ADD, _SUB = (lambda a, b: a + b), (lambda a, b: a - b)
SATURATE = {
    "v_add_u32": (0, 2**32 - 1, False, _ADD), "v_sub_u32": (0, 2**32 - 1, False, _SUB),
    "v_subrev_u32": (0, 2**32 - 1, False, lambda a, b: b - a),
    "v_add_i32": (-2**31, 2**31 - 1, True, _ADD), "v_sub_i32": (-2**31, 2**31 - 1, True, _SUB),
    "v_add_u16": (0, 0xFFFF, False, _ADD), "v_sub_u16": (0, 0xFFFF, False, _SUB),
    "v_subrev_u16": (0, 0xFFFF, False, lambda a, b: b - a),
    "v_add_i16": (-0x8000, 0x7FFF, True, _ADD), "v_sub_i16": (-0x8000, 0x7FFF, True, _SUB),
    "v_mad_u16": (0, 0xFFFF, False, lambda a, b, c: a * b + c),
    "v_mad_legacy_u16": (0, 0xFFFF, False, lambda a, b, c: a * b + c),
    "v_mad_i16": (-0x8000, 0x7FFF, True, lambda a, b, c: a * b + c),
    "v_mad_legacy_i16": (-0x8000, 0x7FFF, True, lambda a, b, c: a * b + c),
}


def saturated(name: str, args: list):
    """The clamped (saturating) result of an integer row."""
    lo, hi, signed, fn = SATURATE[name]
    wide = [(sext if signed else zext)(a, 72) for a in args]
    r = fn(*wide)
    lo_v, hi_v = bv(lo, 72), bv(hi, 72)
    return z3.If(r < lo_v, lo_v, z3.If(r > hi_v, hi_v, r))


@register("v_cndmask_b32")
def _cndmask(m: Machine, ins) -> None:
    dpp = O.Dpp(ins) if ins.encoding == "dpp" else None
    typ = "f32" if any(o.neg or o.abs for o in ins.ops[1:3]) else "b32"
    a, en = O.source(m, ins, ins.ops[1], typ, 0, dpp)
    b, _ = O.source(m, ins, ins.ops[2], typ, 1)
    sel = m.bit(O.mask(m, ins.ops[3], ins.text))
    O.write(m, ins, ins.ops[0], "b32", z3.If(sel, b, a), en)


# the emulator's functions (sums and differences of the operands and the carry-in: the
# same on int64 words and 34-bit terms); name -> (fn(a, b, cin), carry-in?)
CARRY = valu.CARRY


def lane_mask_write(m: Machine, r: int, bit) -> None:
    """Write bit ``bit`` (a Bool in LANE) of every lane to the SGPR pair ``r``;
    inactive lanes' bits become 0 (Ctx.lane_mask_write)."""
    m.sset64(r, m.ctx.lane_mask(z3.And(bit, m.active())))


@register(*CARRY)
def _carry(m: Machine, ins) -> None:
    fn, has_in = CARRY[ins.base]
    if ins.mods.get("clamp"):
        raise Unsupported(ins.text, "clamp")
    dpp = O.Dpp(ins) if ins.encoding == "dpp" else None
    sdst = ins.ops[1]
    if sdst.kind != "s":
        raise Unsupported(ins.text, f"lane-mask destination {sdst.text}")
    a, en = O.source(m, ins, ins.ops[2], "u32", 0, dpp)
    b, _ = O.source(m, ins, ins.ops[3], "u32", 1)
    ci = zext(b2bv(m.bit(O.mask(m, ins.ops[4], ins.text))), 34) if has_in else bv(0, 34)
    r = fn(zext(a, 34), zext(b, 34), ci)
    carry = z3.Extract(33, 32, r) != 0
    O.write(m, ins, ins.ops[0], "b32", z3.Extract(31, 0, r), en)
    lane_mask_write(m, sdst.reg, carry)


@register("v_mad_u64_u32", "v_mad_i64_i32")
def _mad64(m: Machine, ins) -> None:
    signed = ins.base == "v_mad_i64_i32"
    t = "i32" if signed else "u32"
    a, _ = O.source(m, ins, ins.ops[2], t, 0)
    b, _ = O.source(m, ins, ins.ops[3], t, 1)
    c, _ = O.source(m, ins, ins.ops[4], "i64" if signed else "u64", 2)
    if ins.mods.get("clamp"):
        raise Unsupported(ins.text, "clamp")
    ext = sext if signed else zext
    p = ext(a, 64) * ext(b, 64)
    r = p + c
    if signed:
        ov = ((p ^ r) & (c ^ r)) < 0
    else:
        ov = ULT(r, p)
    d = ins.ops[0].reg
    m.vwrite(d, z3.Extract(31, 0, r))
    m.vwrite(d + 1, z3.Extract(63, 32, r))
    lane_mask_write(m, ins.ops[1].reg, ov)


@register("v_nop")
def _vnop(m: Machine, ins) -> None:
    return None


@register("v_swap_b32")
def _swap(m: Machine, ins) -> None:
    a, b = ins.ops[0].reg, ins.ops[1].reg
    x, y = m.vuse(a), m.vuse(b)
    m.vwrite(a, y)
    m.vwrite(b, x)


@register("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32")
def _mbcnt(m: Machine, ins) -> None:
    hi = "hi" in ins.base
    a, _ = O.source(m, ins, ins.ops[1], "u32", 0)
    b, _ = O.source(m, ins, ins.ops[2], "u32", 1)
    lane = zext(LANE, 32)
    n = z3.If(ULT(lane, 32), bv(0, 32), lane - 32) if hi else z3.If(ULT(lane, 32), lane, bv(32, 32))
    below = z3.If(n == 32, bv(0xFFFFFFFF, 32), (bv(1, 32) << n) - 1)
    O.write(m, ins, ins.ops[0], "b32", popcount(a & below) + b)


@register("v_readlane_b32")
def _readlane(m: Machine, ins) -> None:
    lane = z3.Extract(5, 0, O.raw(m, ins.ops[2], 32, False, text=ins.text))
    m.sset(ins.ops[0].reg, at_lane(m.vget(ins.ops[1].reg), lane))


@register("v_readfirstlane_b32")
def _readfirstlane(m: Machine, ins) -> None:
    src = ins.ops[1]
    if src.kind != "v":
        m.sset(ins.ops[0].reg, O.raw(m, src, 32, False, text=ins.text))
        return
    e = m.exec64()
    first = bv(0, 6)
    for i in range(63, -1, -1):
        first = z3.If(z3.Extract(i, i, e) == 1, bv(i, 6), first)
    # the first active lane (lane 0 when none is): there a write under this EXEC holds
    # its new value, and a value every lane computes alike is that value
    live = at_lane(m.vuse(src.reg), first)
    m.sset(ins.ops[0].reg, z3.If(m.ctx.exec_empty(e), at_lane(m.vget(src.reg), 0), live))


@register("v_writelane_b32")
def _writelane(m: Machine, ins) -> None:
    r = ins.ops[0].reg
    val = O.raw(m, ins.ops[1], 32, False, text=ins.text)
    lane = z3.Extract(5, 0, O.raw(m, ins.ops[2], 32, False, text=ins.text))
    m.vset_all(r, z3.If(LANE == lane, val, m.vget(r)))


