"""Vector ALU (VOP1, VOP2, VOP3) in 16, 32 and 64 bits.

Most instructions are one row of :data:`OPS`: destination type, source types
and a numpy function over typed arrays. :func:`build` adds everything the
encodings share: which operand is which, DPP/SDWA/op_sel sources, abs/neg,
clamp and omod, denormal flushing per the MODE register, and the EXEC-masked
write. Instructions with extra outputs (carry, VCC) are built by hand below.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import exact as nx
from asmevo.emu.numerics import approx, fpmode
from asmevo.emu.isa import native
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.errors import UnsupportedInstruction
from asmevo.emu.isa.division import fixup
from asmevo.emu.isa.operands import const_bits, mask_reader
from asmevo.emu.isa.vsrc import Dpp, result_writer, source

U16, U32, U64, I32, I64 = np.uint16, np.uint32, np.uint64, np.int32, np.int64
F16, F32, F64 = np.float16, np.float32, np.float64
M24 = U32(0xFFFFFF)


def _sh(b):
    return (b & U32(31))


def _s24(a):
    a = a.astype(I64) & 0xFFFFFF
    return np.where(a & 0x800000, a - 0x1000000, a)


def _bfe_u(a, b, c):
    off, w = _sh(b), _sh(c)
    mask = ((U64(1) << w.astype(U64)) - U64(1)).astype(U32)
    return (a >> off) & mask


def _bfe_i(a, b, c):
    off, w = _sh(b).astype(I64), _sh(c).astype(I64)
    x = (a.astype(I64) >> off) & ((I64(1) << w) - 1)
    sign = np.where(w > 0, (x >> np.maximum(w - 1, 0)) & 1, 0)
    return np.where(sign == 1, x - (I64(1) << w), x)


def _perm(a, b, sel):
    data = (a.astype(U64) << U64(32)) | b.astype(U64)
    out = np.zeros(np.broadcast(a, b, sel).shape, U32)
    for k in range(4):
        s = (sel >> U32(8 * k)) & U32(0xFF)
        byte = np.zeros(out.shape, U32)
        for i in range(8):
            byte = np.where(s == i, ((data >> U64(8 * i)) & U64(0xFF)).astype(U32), byte)
        for code, src_byte in ((8, 1), (9, 3), (10, 5), (11, 7)):
            bit = ((data >> U64(8 * src_byte + 7)) & U64(1)).astype(U32)
            byte = np.where(s == code, bit * U32(0xFF), byte)
        byte = np.where(s == 12, U32(0), byte)
        byte = np.where(s >= 13, U32(0xFF), byte)
        out |= byte << U32(8 * k)
    return out


def _popcount32(x):
    x = x.astype(U32)
    x = x - ((x >> U32(1)) & U32(0x55555555))
    x = (x & U32(0x33333333)) + ((x >> U32(2)) & U32(0x33333333))
    x = (x + (x >> U32(4))) & U32(0x0F0F0F0F)
    return (x * U32(0x01010101)) >> U32(24)


def _ffbh(x):
    x = x.astype(U32)
    out = np.full(x.shape, 0xFFFFFFFF, U64)
    for i in range(32):
        hit = (out == 0xFFFFFFFF) & (((x >> U32(31 - i)) & U32(1)) == 1)
        out = np.where(hit, U64(i), out)
    return out.astype(U32)


def _ffbl(x):
    x = x.astype(U32)
    out = np.full(x.shape, 0xFFFFFFFF, U64)
    for i in range(31, -1, -1):
        out = np.where(((x >> U32(i)) & U32(1)) == 1, U64(i), out)
    return out.astype(U32)


def _ffbh_i(x):
    v = x.view(I32) if x.dtype == U32 else x.astype(I32)
    y = np.where(v < 0, ~v, v).view(U32)
    return _ffbh(y)


def _bfrev(x):
    x = x.astype(U32)
    out = np.zeros(x.shape, U32)
    for i in range(32):
        out |= ((x >> U32(i)) & U32(1)) << U32(31 - i)
    return out


def _fract(x):
    with np.errstate(invalid="ignore"):
        f = x - np.floor(x)
        top = np.nextafter(x.dtype.type(1), x.dtype.type(0))
        return np.where(np.isinf(x), x.dtype.type(np.nan), np.minimum(f, top)).astype(x.dtype)


def _mul_legacy(a, b):
    with np.errstate(invalid="ignore"):
        return np.where((a == 0) | (b == 0), F32(0), a * b).astype(F32)


def _rtz16(x):
    h = x.astype(F16)
    with np.errstate(invalid="ignore", over="ignore"):
        over = np.abs(h.astype(F32)) > np.abs(x)
        return np.where(over & np.isfinite(x), np.nextafter(h, F16(0)), h).astype(F16)


def _f16pack(lo, hi):
    return lo.view(U16).astype(U32) | (hi.view(U16).astype(U32) << U32(16))


def _mad_rows(mul):
    """v_mad_f32 and friends: MUL_IEEE then ADD, two roundings. LLVM never selects them
    with f32 denormals enabled because the hardware does not support denormals there;
    how it treats them is not documented, so: with MODE flushing f32 denormals in and
    out, the product and result are flushed like every f32 op; otherwise a denormal
    operand, product or result refuses the instruction."""
    def fn(a, b, c, *, flush: bool, mask=None):
        if flush:
            p = nx.ftz32(np.asarray(mul(a, b), F32))
            return nx.ftz32((p + c).astype(F32))
        p = np.asarray(mul(a, b), F32)
        r = (p + c).astype(F32)
        if any(_has_denormal(x if mask is None else np.where(mask, x, F32(0)))
               for x in (a, b, c, p, r)):     # inactive lanes are not computed
            raise _Unmodeled("a denormal operand, product or result (MODE keeps f32 "
                             "denormals; the hardware's MAD does not support them)")
        return r
    fn.mad = True
    return fn


class _Unmodeled(Exception):
    """Raised by a row function for inputs whose hardware result is not known."""


def _has_denormal(x) -> bool:
    x = np.asarray(x)
    return bool(((x != 0) & (np.abs(x) < nx.F32_MIN_NORMAL)).any())


_mad32 = _mad_rows(lambda a, b: a * b)


# name: (dst type, source types, fn)
OPS: dict[str, tuple[str, tuple[str, ...], object]] = {
    # moves and bit logic
    "v_mov_b32": ("b32", ("b32",), lambda a: a),
    "v_mov_b64": ("b64", ("b64",), lambda a: a),
    "v_not_b32": ("b32", ("b32",), lambda a: ~a),
    "v_bfrev_b32": ("b32", ("b32",), _bfrev),
    "v_ffbh_u32": ("b32", ("b32",), _ffbh),
    "v_ffbl_b32": ("b32", ("b32",), _ffbl),
    "v_ffbh_i32": ("b32", ("b32",), _ffbh_i),
    "v_and_b32": ("b32", ("b32", "b32"), lambda a, b: a & b),
    "v_or_b32": ("b32", ("b32", "b32"), lambda a, b: a | b),
    "v_xor_b32": ("b32", ("b32", "b32"), lambda a, b: a ^ b),
    "v_xnor_b32": ("b32", ("b32", "b32"), lambda a, b: ~(a ^ b)),
    "v_lshlrev_b32": ("b32", ("b32", "b32"), lambda a, b: b << _sh(a)),
    "v_lshrrev_b32": ("b32", ("b32", "b32"), lambda a, b: b >> _sh(a)),
    "v_ashrrev_i32": ("b32", ("b32", "i32"), lambda a, b: b >> _sh(a).astype(I32)),
    "v_lshl_b32": ("b32", ("b32", "b32"), lambda a, b: a << _sh(b)),
    "v_lshr_b32": ("b32", ("b32", "b32"), lambda a, b: a >> _sh(b)),
    "v_ashr_i32": ("b32", ("i32", "b32"), lambda a, b: a >> _sh(b).astype(I32)),
    "v_lshlrev_b64": ("b64", ("b32", "b64"), lambda a, b: b << (a & U32(63)).astype(U64)),
    "v_lshrrev_b64": ("b64", ("b32", "b64"), lambda a, b: b >> (a & U32(63)).astype(U64)),
    "v_ashrrev_i64": ("b64", ("b32", "i64"), lambda a, b: b >> (a & U32(63)).astype(I64)),
    "v_bfe_u32": ("b32", ("b32", "b32", "b32"), _bfe_u),
    "v_bfe_i32": ("b32", ("b32", "b32", "b32"), _bfe_i),
    "v_bfi_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | (~a & c)),
    "v_bfm_b32": ("b32", ("b32", "b32"),
                  lambda a, b: (((U64(1) << _sh(a).astype(U64)) - U64(1)) << _sh(b).astype(U64))),
    "v_alignbit_b32": ("b32", ("b32", "b32", "b32"),
                       lambda a, b, c: ((a.astype(U64) << U64(32)) | b.astype(U64))
                       >> _sh(c).astype(U64)),
    "v_alignbyte_b32": ("b32", ("b32", "b32", "b32"),
                        lambda a, b, c: ((a.astype(U64) << U64(32)) | b.astype(U64))
                        >> (U64(8) * (c & U32(3)).astype(U64))),
    "v_perm_b32": ("b32", ("b32", "b32", "b32"), _perm),
    "v_lshl_or_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a << _sh(b)) | c),
    "v_and_or_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | c),
    "v_or3_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a | b | c),
    "v_bcnt_u32_b32": ("b32", ("b32", "b32"), lambda a, b: _popcount32(a) + b),
    # integer arithmetic
    "v_add_u32": ("b32", ("b32", "b32"), lambda a, b: a + b),
    "v_sub_u32": ("b32", ("b32", "b32"), lambda a, b: a - b),
    "v_subrev_u32": ("b32", ("b32", "b32"), lambda a, b: b - a),
    "v_add_i32": ("b32", ("b32", "b32"), lambda a, b: a + b),
    "v_sub_i32": ("b32", ("b32", "b32"), lambda a, b: a - b),
    "v_add3_u32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a + b + c),
    "v_lshl_add_u32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a << _sh(b)) + c),
    "v_add_lshl_u32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a + b) << _sh(c)),
    "v_xad_u32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a ^ b) + c),
    "v_lshl_add_u64": ("b64", ("b64", "b32", "b64"),
                       lambda a, b, c: (a << (b & U32(7)).astype(U64)) + c),
    "v_mul_lo_u32": ("b32", ("b32", "b32"), lambda a, b: a * b),
    "v_mul_hi_u32": ("b32", ("b32", "b32"), lambda a, b: (a.astype(U64) * b.astype(U64)) >> U64(32)),
    "v_mul_hi_i32": ("b32", ("i32", "i32"),
                     lambda a, b: (a.astype(I64) * b.astype(I64)) >> I64(32)),
    "v_mul_u32_u24": ("b32", ("b32", "b32"), lambda a, b: (a & M24) * (b & M24)),
    "v_mul_hi_u32_u24": ("b32", ("b32", "b32"),
                         lambda a, b: ((a & M24).astype(U64) * (b & M24).astype(U64)) >> U64(32)),
    "v_mul_i32_i24": ("b32", ("b32", "b32"), lambda a, b: _s24(a) * _s24(b)),
    "v_mul_hi_i32_i24": ("b32", ("b32", "b32"), lambda a, b: (_s24(a) * _s24(b)) >> 32),
    "v_mad_u32_u24": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & M24) * (b & M24) + c),
    "v_mad_i32_i24": ("b32", ("b32", "b32", "b32"),
                      lambda a, b, c: _s24(a) * _s24(b) + c.astype(I64)),
    "v_min_i32": ("b32", ("i32", "i32"), np.minimum),
    "v_max_i32": ("b32", ("i32", "i32"), np.maximum),
    "v_min_u32": ("b32", ("u32", "u32"), np.minimum),
    "v_max_u32": ("b32", ("u32", "u32"), np.maximum),
    "v_min3_i32": ("b32", ("i32", "i32", "i32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_i32": ("b32", ("i32", "i32", "i32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u32": ("b32", ("u32", "u32", "u32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_u32": ("b32", ("u32", "u32", "u32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_med3_i32": ("b32", ("i32", "i32", "i32"),
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "v_med3_u32": ("b32", ("u32", "u32", "u32"),
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "v_sad_u32": ("b32", ("u32", "u32", "u32"),
                  lambda a, b, c: np.where(a > b, a - b, b - a) + c),
    # 16-bit integer
    "v_add_u16": ("u16", ("u16", "u16"), lambda a, b: a + b),
    "v_sub_u16": ("u16", ("u16", "u16"), lambda a, b: a - b),
    "v_subrev_u16": ("u16", ("u16", "u16"), lambda a, b: b - a),
    "v_mul_lo_u16": ("u16", ("u16", "u16"), lambda a, b: a * b),
    "v_add_i16": ("u16", ("i16", "i16"), lambda a, b: a.astype(I64) + b),
    "v_sub_i16": ("u16", ("i16", "i16"), lambda a, b: a.astype(I64) - b),
    "v_mad_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: a.astype(I64) * b + c),
    "v_mad_i16": ("u16", ("i16", "i16", "i16"), lambda a, b, c: a.astype(I64) * b + c),
    "v_mad_legacy_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: a.astype(I64) * b + c),
    "v_mad_legacy_i16": ("u16", ("i16", "i16", "i16"), lambda a, b, c: a.astype(I64) * b + c),
    "v_lshlrev_b16": ("u16", ("u16", "u16"), lambda a, b: b << (a & U16(15))),
    "v_lshrrev_b16": ("u16", ("u16", "u16"), lambda a, b: b >> (a & U16(15))),
    "v_ashrrev_i16": ("u16", ("u16", "i16"), lambda a, b: b >> (a & U16(15)).astype(np.int16)),
    "v_max_u16": ("u16", ("u16", "u16"), np.maximum),
    "v_min_u16": ("u16", ("u16", "u16"), np.minimum),
    "v_max_i16": ("u16", ("i16", "i16"), np.maximum),
    "v_min_i16": ("u16", ("i16", "i16"), np.minimum),
    "v_max3_i16": ("u16", ("i16", "i16", "i16"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_i16": ("u16", ("i16", "i16", "i16"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_med3_i16": ("u16", ("i16", "i16", "i16"),
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "v_max3_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_med3_u16": ("u16", ("u16", "u16", "u16"),
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    # float32
    "v_add_f32": ("f32", ("f32", "f32"), lambda a, b: a + b),
    "v_sub_f32": ("f32", ("f32", "f32"), lambda a, b: a - b),
    "v_subrev_f32": ("f32", ("f32", "f32"), lambda a, b: b - a),
    "v_mul_f32": ("f32", ("f32", "f32"), lambda a, b: a * b),
    "v_mul_legacy_f32": ("f32", ("f32", "f32"), _mul_legacy),
    "v_min_f32": ("f32", ("f32", "f32"), nx.fmin),
    "v_max_f32": ("f32", ("f32", "f32"), nx.fmax),
    "v_min3_f32": ("f32", ("f32", "f32", "f32"), nx.fmin3),
    "v_max3_f32": ("f32", ("f32", "f32", "f32"), nx.fmax3),
    "v_med3_f32": ("f32", ("f32", "f32", "f32"), nx.fmed3),
    "v_fma_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_fmamk_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_fmaak_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_mad_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_mad_legacy_f32": ("f32", ("f32", "f32", "f32"), _mad_rows(_mul_legacy)),
    "v_madmk_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_madak_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_ldexp_f32": ("f32", ("f32", "i32"), nx.ldexp),
    "v_fract_f32": ("f32", ("f32",), _fract),
    "v_trunc_f32": ("f32", ("f32",), np.trunc),
    "v_ceil_f32": ("f32", ("f32",), np.ceil),
    "v_floor_f32": ("f32", ("f32",), np.floor),
    "v_rndne_f32": ("f32", ("f32",), np.rint),
    "v_frexp_mant_f32": ("f32", ("f32",), nx.frexp_mant),
    "v_frexp_exp_i32_f32": ("b32", ("f32",), nx.frexp_exp),
    "v_div_fixup_f32": ("f32", ("f32", "f32", "f32"), fixup),
    # conversions
    "v_cvt_f32_i32": ("f32", ("i32",), lambda a: a.astype(F32)),
    "v_cvt_f32_u32": ("f32", ("u32",), lambda a: a.astype(F32)),
    "v_cvt_i32_f32": ("b32", ("f32",), lambda a: nx.f2i(a, -2**31, 2**31 - 1, I64)),
    "v_cvt_u32_f32": ("b32", ("f32",), lambda a: nx.f2i(a, 0, 2**32 - 1, I64)),
    "v_cvt_rpi_i32_f32": ("b32", ("f32",), lambda a: nx.f2i(np.floor(a.astype(F64) + 0.5),
                                                            -2**31, 2**31 - 1, I64)),
    "v_cvt_flr_i32_f32": ("b32", ("f32",), lambda a: nx.f2i(np.floor(a), -2**31, 2**31 - 1, I64)),
    "v_cvt_f16_f32": ("f16", ("f32",), lambda a: a.astype(F16)),
    "v_cvt_f32_f16": ("f32", ("f16",), lambda a: a.astype(F32)),
    "v_cvt_f64_f32": ("f64", ("f32",), lambda a: a.astype(F64)),
    "v_cvt_f32_f64": ("f32", ("f64",), lambda a: a.astype(F32)),
    "v_cvt_f64_i32": ("f64", ("i32",), lambda a: a.astype(F64)),
    "v_cvt_f64_u32": ("f64", ("u32",), lambda a: a.astype(F64)),
    "v_cvt_i32_f64": ("b32", ("f64",), lambda a: nx.f2i(a, -2**31, 2**31 - 1, I64)),
    "v_cvt_u32_f64": ("b32", ("f64",), lambda a: nx.f2i(a, 0, 2**32 - 1, I64)),
    "v_cvt_f32_ubyte0": ("f32", ("b32",), lambda a: (a & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte1": ("f32", ("b32",), lambda a: ((a >> U32(8)) & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte2": ("f32", ("b32",), lambda a: ((a >> U32(16)) & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte3": ("f32", ("b32",), lambda a: (a >> U32(24)).astype(F32)),
    "v_cvt_f16_u16": ("f16", ("u16",), lambda a: a.astype(F16)),
    "v_cvt_f16_i16": ("f16", ("i16",), lambda a: a.astype(F16)),
    "v_cvt_u16_f16": ("u16", ("f16",), lambda a: nx.f2i(a, 0, 0xFFFF, I64)),
    "v_cvt_i16_f16": ("u16", ("f16",), lambda a: nx.f2i(a, -0x8000, 0x7FFF, I64)),
    "v_cvt_pkrtz_f16_f32": ("b32", ("f32", "f32"), lambda a, b: _f16pack(_rtz16(a), _rtz16(b))),
    "v_cvt_pk_u16_u32": ("b32", ("u32", "u32"),
                         lambda a, b: (a & U32(0xFFFF)) | ((b & U32(0xFFFF)) << U32(16))),
    "v_pack_b32_f16": ("b32", ("f16", "f16"), _f16pack),
    # float16
    "v_add_f16": ("f16", ("f16", "f16"), lambda a, b: a + b),
    "v_sub_f16": ("f16", ("f16", "f16"), lambda a, b: a - b),
    "v_subrev_f16": ("f16", ("f16", "f16"), lambda a, b: b - a),
    "v_mul_f16": ("f16", ("f16", "f16"), lambda a, b: a * b),
    "v_max_f16": ("f16", ("f16", "f16"), nx.fmax),
    "v_min_f16": ("f16", ("f16", "f16"), nx.fmin),
    "v_min3_f16": ("f16", ("f16", "f16", "f16"), nx.fmin3),
    "v_max3_f16": ("f16", ("f16", "f16", "f16"), nx.fmax3),
    "v_med3_f16": ("f16", ("f16", "f16", "f16"), nx.fmed3),
    "v_div_fixup_f16": ("f16", ("f16", "f16", "f16"), fixup),
    "v_div_fixup_legacy_f16": ("f16", ("f16", "f16", "f16"), fixup),
    "v_fma_f16": ("f16", ("f16", "f16", "f16"), nx.fma16),
    "v_ldexp_f16": ("f16", ("f16", "i16"), nx.ldexp),
    "v_trunc_f16": ("f16", ("f16",), np.trunc),
    "v_floor_f16": ("f16", ("f16",), np.floor),
    "v_ceil_f16": ("f16", ("f16",), np.ceil),
    "v_rndne_f16": ("f16", ("f16",), np.rint),
    # float64
    "v_add_f64": ("f64", ("f64", "f64"), lambda a, b: a + b),
    "v_mul_f64": ("f64", ("f64", "f64"), lambda a, b: a * b),
    "v_min_f64": ("f64", ("f64", "f64"), nx.fmin),
    "v_max_f64": ("f64", ("f64", "f64"), nx.fmax),
    "v_fma_f64": ("f64", ("f64", "f64", "f64"), nx.fma64),
    "v_ldexp_f64": ("f64", ("f64", "i32"), nx.ldexp),
    "v_fract_f64": ("f64", ("f64",), _fract),
    "v_trunc_f64": ("f64", ("f64",), np.trunc),
    "v_ceil_f64": ("f64", ("f64",), np.ceil),
    "v_floor_f64": ("f64", ("f64",), np.floor),
    "v_rndne_f64": ("f64", ("f64",), np.rint),
    "v_frexp_mant_f64": ("f64", ("f64",), nx.frexp_mant),
    "v_frexp_exp_i32_f64": ("b32", ("f64",), nx.frexp_exp),
    "v_div_fixup_f64": ("f64", ("f64", "f64", "f64"), fixup),
}
# Accumulating forms: the destination is also the last source.
ACCUM = {"v_mac_f32": "v_mad_f32", "v_fmac_f32": "v_fma_f32", "v_fmac_f64": "v_fma_f64",
         "v_mac_f16": None, "v_fmac_f16": None}

# Float-result rows that never round (exact for every input): no round-mode check.
ROUND_FREE = {"v_min_f32", "v_max_f32", "v_min3_f32", "v_max3_f32", "v_med3_f32",
              "v_min_f16", "v_max_f16", "v_min3_f16", "v_max3_f16", "v_med3_f16",
              "v_min_f64", "v_max_f64", "v_trunc_f32", "v_ceil_f32", "v_floor_f32",
              "v_rndne_f32", "v_trunc_f16", "v_floor_f16", "v_ceil_f16", "v_rndne_f16",
              "v_trunc_f64", "v_ceil_f64", "v_floor_f64", "v_rndne_f64", "v_frexp_mant_f32",
              "v_frexp_mant_f64", "v_cvt_f32_f16", "v_cvt_f64_f32", "v_cvt_f64_i32",
              "v_cvt_f64_u32", "v_cvt_f32_ubyte0", "v_cvt_f32_ubyte1", "v_cvt_f32_ubyte2",
              "v_cvt_f32_ubyte3", "v_div_fixup_f32", "v_div_fixup_f64", "v_div_fixup_f16",
              "v_div_fixup_legacy_f16", "v_cvt_pkrtz_f16_f32", "v_pack_b32_f16",
              "v_mov_b32", "v_mov_b64"}
# min/max/med3: MODE.IEEE decides sNaN handling; denormal output is not flushed
# (the ISA: only the input denorm mode applies to them).
IEEE_NAN_RULES = {n for n in ROUND_FREE if n[2:5] in ("min", "max", "med")}
# Rows whose NaN result is fully specified by the ISA (not the arithmetic NaN rule).
NAN_SPECIFIED = IEEE_NAN_RULES | {"v_div_fixup_f32", "v_div_fixup_f64", "v_div_fixup_f16",
                                  "v_div_fixup_legacy_f16"}
# Integer rows whose clamp bit saturates: name -> (lowest, highest) of the result type.
SATURATE = {"v_add_u32": (0, 2**32 - 1), "v_sub_u32": (0, 2**32 - 1),
            "v_subrev_u32": (0, 2**32 - 1), "v_add_i32": (-2**31, 2**31 - 1),
            "v_sub_i32": (-2**31, 2**31 - 1), "v_add_u16": (0, 0xFFFF),
            "v_sub_u16": (0, 0xFFFF), "v_subrev_u16": (0, 0xFFFF),
            "v_add_i16": (-0x8000, 0x7FFF), "v_sub_i16": (-0x8000, 0x7FFF),
            "v_mad_u16": (0, 0xFFFF), "v_mad_legacy_u16": (0, 0xFFFF),
            "v_mad_i16": (-0x8000, 0x7FFF), "v_mad_legacy_i16": (-0x8000, 0x7FFF)}
# exact (int64) forms of the saturating rows: the wrapping rows compute modulo 2^32
_EXACT = {"v_add_u32": ("u32", "u32"), "v_sub_u32": ("u32", "u32"),
          "v_subrev_u32": ("u32", "u32"), "v_add_i32": ("i32", "i32"),
          "v_sub_i32": ("i32", "i32")}


def _to_bits(res, typ: str):
    kind, width = typ[0], int(typ[1:])
    if width == 64:
        if kind == "f":
            return np.asarray(res, F64).view(U64)
        return np.asarray(res).astype(U64) if np.asarray(res).dtype != U64 else res
    if width == 16:
        if kind == "f":
            return np.asarray(res, F16).view(U16).astype(U32)
        return (np.asarray(res).astype(I64) & 0xFFFF).astype(U32)
    if kind == "f":
        return np.asarray(res, F32).view(U32)
    r = np.asarray(res)
    if r.dtype == U32:
        return r
    if r.dtype in (I32, np.int16, U16, np.int8, np.uint8):
        return r.astype(I32).view(U32) if r.dtype != U16 else r.astype(U32)
    return (r.astype(I64) & I64(0xFFFFFFFF)).astype(U32) if r.dtype != U64 else \
        (r & U64(0xFFFFFFFF)).astype(U32)


_FTZ = {32: nx.ftz32, 64: nx.ftz64, 16: nx.ftz16}


def _omod(ins: Insn) -> float:
    if "mul" in ins.mods:
        return float(ins.mods["mul"])
    if "div" in ins.mods:
        return 1.0 / float(ins.mods["div"])
    return 1.0


def build(ins: Insn, name: str | None = None, row=None) -> Decoded:
    """The generic VOP1/VOP2/VOP3 builder for rows of :data:`OPS` (or ``row``).

    Around the row's function it applies what MODE says (see
    :mod:`asmevo.emu.numerics.fpmode`): round-mode refusal, denormal flushing of inputs
    and outputs, IEEE-mode NaN rules, the DX10 clamp of NaN, output modifiers
    (ignored by hardware in IEEE mode; refused otherwise), integer clamp as
    saturation. ``row`` functions marked ``approx`` get the launch's
    ``approx_variant`` (:mod:`asmevo.emu.numerics.approx`).
    """
    name = name or ins.base
    accum = name in ACCUM
    if accum:
        if ACCUM[name] is None:
            raise ins.fail()
        name = ACCUM[name]
    dst_t, src_ts, fn = row if row is not None else OPS[name]
    if name == "v_mov_b32" and any(o.neg or o.abs for o in ins.ops[1:2]):
        src_ts = ("f32",)          # float modifiers on a move: sign-bit operations only
    ops = ins.ops
    nsrc = len(src_ts)
    srcs_ops = ops[1:1 + nsrc] if not accum else ops[1:] + [ops[0]]
    if len(srcs_ops) != nsrc:
        raise ins.fail(f"expected {nsrc} sources, got {len(srcs_ops)}")
    clamp = bool(ins.mods.get("clamp"))
    is_float = dst_t[0] == "f"
    if clamp and not is_float:
        if name not in SATURATE:
            raise ins.fail("integer clamp")
        lo, hi = SATURATE[name]
        if name in _EXACT:
            src_ts = _EXACT[name]
        inner = fn
        fn = lambda *a: np.clip(inner(*[x.astype(I64) for x in a]), lo, hi)
    dpp = Dpp(ins) if ins.encoding == "dpp" else None
    readers = [source(ins, o, t, i, dpp=dpp) for i, (o, t) in enumerate(zip(srcs_ops, src_ts))]
    write = result_writer(ins, ops[0], dst_t, dpp=dpp)
    float_srcs = [i for i, t in enumerate(src_ts) if t[0] == "f"]
    if not (is_float or float_srcs):
        generic = _build_int(readers, fn, write, dst_t)
        row = native.INT_ROWS.get(name)
        on_regs = None if row is None or clamp else \
            _plain_sources(ins, srcs_ops, ops[0], dpp, row[1])
        if on_regs is None:
            return generic
        return op(_int_on_registers(row[0], on_regs, ops[0].reg, generic.fn))
    spec = _FloatSpec(ins, name, dst_t, src_ts, fn, _omod(ins), clamp)
    # a family member runs member by member in a batch; the NaN choice is per wave

    def run(c):
        write(c, _to_bits(spec.compute(c, [r(c) for r in readers]), dst_t))
    on_regs = _on_registers(ins, spec, srcs_ops, ops[0], dpp)
    if on_regs is None:
        return op(run, variant=spec.approx)
    kinds, operands = on_regs

    def fused(c):
        # the row straight on the register file (asmevo.emu.isa.native.regs) where the mode
        # asks for nothing else; compute()'s checks first, in its order
        mode = fpmode.mode_of(c, spec.mn)
        if spec.rounds:
            fpmode.check_round(c, mode, 32, spec.mn)
        lib = native.library()
        if lib is not None and fpmode.ieee(mode) and fpmode.flush_bits(mode, 32) == (False, False):
            members, variant = spec.members(c)
            if native.regs(lib, spec.native, c, kinds, operands, ops[0].reg, variant, members,
                           spec.key):
                return
        run(c)
    return op(fused, variant=spec.approx)


def _on_registers(ins, spec, srcs, dst, dpp):
    """``(kinds, operands)`` for :func:`asmevo.emu.isa.native.regs` where a native float32 row
    reads only VGPRs, SGPRs and constants without modifiers and writes a whole VGPR (no
    DPP, SDWA or op_sel), else None."""
    if spec.native is None or spec.out_w != 32:
        return None
    return _plain_sources(ins, srcs, dst, dpp)


def _plain_sources(ins, srcs, dst, dpp, wide=()):
    """``(kinds, operands)`` of sources that are VGPRs (0, the register), SGPRs (1, the
    register) or constants (2, their bits; 64 of them for the sources in ``wide``)
    without modifiers, of a row that writes whole VGPRs (no DPP, SDWA or op_sel); else
    None. What native.c's rows on registers read."""
    if dpp is not None or ins.encoding == "sdwa" or ins.mods.get("op_sel") or dst.kind != "v":
        return None
    kinds, operands = [], []
    for i, o in enumerate(srcs):
        if o.neg or o.abs:
            return None
        if o.kind == "v":
            kinds.append(0)
            operands.append(o.reg)
        elif o.kind == "s":
            kinds.append(1)
            operands.append(o.reg)
        elif o.kind == "const":
            kinds.append(2)
            operands.append(const_bits(o, 64 if i in wide else 32))
        else:
            return None
    return tuple(kinds), tuple(operands)


def _int_on_registers(row: int, on_regs: tuple, dst: int, generic):
    """An integer row straight on the register file (:func:`asmevo.emu.isa.native.int_regs`),
    ``generic`` (the numpy row) where the library is not there."""
    kinds, operands = on_regs

    def fused(c):
        lib = native.library()
        if lib is None or not native.int_regs(lib, row, c, kinds, operands, dst):
            generic(c)
    return fused


def _build_int(readers, fn, write, dst_t) -> Decoded:
    if len(readers) == 1:
        r0 = readers[0]

        def run1(c):
            with np.errstate(all="ignore"):
                res = fn(r0(c))
            write(c, _to_bits(res, dst_t))
        return op(run1)

    def run(c):
        with np.errstate(all="ignore"):
            res = fn(*[r(c) for r in readers])
        write(c, _to_bits(res, dst_t))
    return op(run)


class _FloatSpec:
    """Everything a float row needs at run time, decided once at decode."""

    def __init__(self, ins, name, dst_t, src_ts, fn, om, clamp):
        self.mn = ins.mnemonic
        self.name = name
        self.fn = fn
        self.approx = bool(getattr(fn, "approx", False))
        self.mad = bool(getattr(fn, "mad", False))
        self.key = approx.opcode_key(name)
        self.is_float = dst_t[0] == "f"
        self.out_w = int(dst_t[1:])
        self.float_srcs = [i for i, t in enumerate(src_ts) if t[0] == "f"]
        self.in_w = int(src_ts[self.float_srcs[0]][1:]) if self.float_srcs else self.out_w
        self.rounds = self.is_float and name not in ROUND_FREE
        self.minmax = name in IEEE_NAN_RULES
        self.arith_nan = self.is_float and name not in NAN_SPECIFIED
        self.om, self.clamp = om, clamp
        self.bits_only = name == "v_mov_b32"
        # the launch's approx_variant matters: a family member, or the NaN choice
        self.reads_variant = not self.bits_only and (self.approx or (self.is_float
                                                                     and self.arith_nan))
        # asmevo.emu.isa.native's operation for this row, where nothing around it needs numpy
        self.native = native.ROWS.get(name) if (
            self.arith_nan and not (self.approx or self.mad or self.minmax or clamp) and
            om == 1.0 and self.out_w == self.in_w == 32 and
            len(self.float_srcs) == len(src_ts)) else None

    def compute(self, c, args):
        mode = fpmode.mode_of(c, self.mn)
        if self.rounds:
            fpmode.check_round(c, mode, self.out_w, self.mn)
        if self.bits_only:
            return args[0]
        fin, fout = fpmode.flush_bits(mode, self.in_w)
        if fin:
            ftz = _FTZ[self.in_w]
            for i in self.float_srcs:
                args[i] = ftz(args[i])
        ieee = fpmode.ieee(mode)
        if not ieee and not self.minmax and fpmode.has_snan(*[args[i] for i in self.float_srcs],
                                                           mask=c.mask):
            raise UnsupportedInstruction(self.mn, c.kernel, c.address, "signalling NaN input "
                                         "with MODE.IEEE clear (not specified)")
        members, variant = self.members(c)
        if self.native is not None and ieee and not fout:    # native rows: in_w == out_w
            lib = native.library()      # inputs flushed above where the mode says so
            # the rule on every lane: only EXEC's are written (result_writer)
            res = None if lib is None else native.arith(
                lib, self.native, args, variant, members, self.key)
            if res is not None:         # no clamp, output modifier or flush: _post is a no-op
                return res
        with np.errstate(all="ignore"):
            if self.minmax:
                res = self.fn(*args, ieee=ieee)
            elif self.mad:
                try:
                    res = self.fn(*args, flush=(mode >> 4) & 3 == 0, mask=c.mask)
                except _Unmodeled as exc:
                    raise UnsupportedInstruction(self.mn, c.kernel, c.address, str(exc)) from None
            elif self.approx:
                res = self.fn(*args, variant=variant, key=self.key)
            else:
                res = self.fn(*args)
            if not self.is_float:
                return res
            res = np.asarray(res)
            if self.arith_nan:
                # only EXEC's lanes are written (result_writer): NaNs elsewhere are moot
                srcs = [args[i] for i in self.float_srcs]
                res = approx.nan_result(res, srcs, variant, self.key, mask=c.mask) \
                    if members is None else approx.nan_by_member(res, srcs, members,
                                                                 self.key, c.mask)
            if self.out_w == 16:
                fpmode.check_f16_overflow(c, mode, res, [args[i] for i in self.float_srcs],
                                          self.mn)
            return self._post(c, res, mode, ieee)

    def members(self, c):
        """(each wave's member or None, the member): waves of several approximate members
        at once (asmevo.emu.run.batch) differ here only in the NaN choice (family members
        are run member by member)."""
        members = c.members if self.reads_variant else None
        variant = c.approx_variant if self.reads_variant and members is None else 0
        return members, variant

    def _post(self, c, res, mode, ieee):
        if self.om != 1.0:
            if not ieee:
                raise UnsupportedInstruction(self.mn, c.kernel, c.address, "output modifier "
                                             "with MODE.IEEE clear (not modeled)")
            # hardware ignores omod in IEEE mode
        if self.clamp:
            res = nx.clamp01(res, fpmode.dx10(mode))
        if not self.minmax and fpmode.flush_bits(mode, self.out_w)[1]:
            res = _FTZ[self.out_w](res)
        return res


@register(*OPS, *ACCUM)
def _generic(ins: Insn) -> Decoded:
    return build(ins)


# -- instructions with a lane-mask input or output ------------------------------

def _mask_out_reg(ins: Insn, i: int) -> int:
    o = ins.ops[i]
    if o.kind != "s":
        raise ins.fail(f"lane-mask destination {o.text}")
    return o.reg


@register("v_cndmask_b32")
def _cndmask(ins: Insn) -> Decoded:
    dpp = Dpp(ins) if ins.encoding == "dpp" else None
    r0 = source(ins, ins.ops[1], "b32", 0, dpp=dpp)
    r1 = source(ins, ins.ops[2], "b32", 1)
    if ins.ops[1].neg or ins.ops[1].abs or ins.ops[2].neg or ins.ops[2].abs:
        r0 = source(ins, ins.ops[1], "f32", 0, dpp=dpp)
        r1 = source(ins, ins.ops[2], "f32", 1)
    m = mask_reader(ins.ops[3])
    write = result_writer(ins, ins.ops[0], "b32", dpp=dpp)

    def run(c):
        a, b = r0(c), r1(c)
        res = np.where(m(c), b, a)
        write(c, res.view(U32) if res.dtype != U32 else res)
    return op(run)


CARRY = {  # name: (fn(a, b, cin) -> (result u64 arithmetic), carry-in?)
    "v_add_co_u32": (lambda a, b, ci: a + b, False),
    "v_sub_co_u32": (lambda a, b, ci: a - b, False),
    "v_subrev_co_u32": (lambda a, b, ci: b - a, False),
    "v_addc_co_u32": (lambda a, b, ci: a + b + ci, True),
    "v_subb_co_u32": (lambda a, b, ci: a - b - ci, True),
    "v_subbrev_co_u32": (lambda a, b, ci: b - a - ci, True),
}


@register(*CARRY)
def _carry(ins: Insn) -> Decoded:
    fn, has_in = CARRY[ins.base]
    dpp = Dpp(ins) if ins.encoding == "dpp" else None
    sdst = _mask_out_reg(ins, 1)
    ra = source(ins, ins.ops[2], "u32", 0, dpp=dpp)
    rb = source(ins, ins.ops[3], "u32", 1)
    cin = mask_reader(ins.ops[4]) if has_in else None
    write = result_writer(ins, ins.ops[0], "b32", dpp=dpp)
    if ins.mods.get("clamp"):
        raise ins.fail("clamp")

    def run(c):
        a = ra(c).astype(I64)
        b = rb(c).astype(I64)
        ci = cin(c).astype(I64) if cin is not None else 0
        r = fn(a, b, ci)
        carry = (r > 0xFFFFFFFF) | (r < 0)
        res = (r & 0xFFFFFFFF).astype(U32)
        write(c, res)
        c.lane_mask_write(sdst, np.broadcast_to(carry, (c.w, 64)))
    return op(run)


@register("v_mad_u64_u32", "v_mad_i64_i32")
def _mad64(ins: Insn) -> Decoded:
    signed = ins.base == "v_mad_i64_i32"
    d = ins.ops[0].reg
    sdst = _mask_out_reg(ins, 1)
    t = "i32" if signed else "u32"
    ra, rb = source(ins, ins.ops[2], t, 0), source(ins, ins.ops[3], t, 1)
    rc = source(ins, ins.ops[4], "i64" if signed else "u64", 2)

    def run(c):
        a, b, cc = ra(c), rb(c), rc(c)
        if signed:
            p = a.astype(I64) * b.astype(I64)
            r = p + cc
            ov = ((p ^ r) & (cc ^ r)) < 0     # signed overflow of the 64-bit add
            bits = r.view(U64) if isinstance(r, np.ndarray) else np.asarray(r).view(U64)
        else:
            p = a.astype(U64) * b.astype(U64)
            r = p + cc
            ov = r < p
            bits = r
        c.vw64(d, np.broadcast_to(bits, (c.w, 64)))
        c.lane_mask_write(sdst, np.broadcast_to(ov, (c.w, 64)))
    return op(run)


@register("v_nop")
def _vnop(ins: Insn) -> Decoded:
    return op(lambda c: None)


@register("v_swap_b32")
def _swap(ins: Insn) -> Decoded:
    a, b = ins.ops[0].reg, ins.ops[1].reg

    def run(c):
        x, y = c.vr(a).copy(), c.vr(b).copy()
        c.vw(a, y)
        c.vw(b, x)
    return op(run)


@register("v_accvgpr_read_b32", "v_accvgpr_write_b32", "v_accvgpr_mov_b32")
def _accmov(ins: Insn) -> Decoded:
    return build(ins, "v_mov_b32")


@register("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32")
def _mbcnt(ins: Insn) -> Decoded:
    hi = "hi" in ins.base
    ra, rb = source(ins, ins.ops[1], "u32", 0), source(ins, ins.ops[2], "u32", 1)
    write = result_writer(ins, ins.ops[0], "b32")
    lanes = np.arange(64)
    if hi:
        n = np.clip(lanes - 32, 0, 32)
    else:
        n = np.clip(lanes, 0, 32)
    below = ((U64(1) << n.astype(U64)) - U64(1)).astype(U32)
    below = np.where(n >= 32, U32(0xFFFFFFFF), below).astype(U32)

    def run(c):
        a = np.broadcast_to(ra(c), (c.w, 64))
        write(c, _popcount32(a & below) + rb(c))
    return op(run)
