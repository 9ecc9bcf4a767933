"""Vector ALU (VOP1, VOP2, VOP3) in 16, 32 and 64 bits.

Most instructions are one row of :data:`OPS`: destination type, source types
and a numpy function over typed arrays. :func:`build` adds everything the
encodings share: which operand is which, DPP/SDWA/op_sel sources, abs/neg,
clamp and omod, denormal flushing per the MODE register, and the EXEC-masked
write. Instructions with extra outputs (carry, VCC) are built by hand below.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu import numerics as nx
from asmevo.emu.decode import Decoded, Insn, op, register
from asmevo.emu.operands import mask_reader
from asmevo.emu.vsrc import Dpp, result_writer, source

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


def _via64(fn, dt):
    def g(x):
        with np.errstate(all="ignore"):
            return fn(x.astype(F64)).astype(dt)
    return g


def _ldexp(x, e):
    return np.ldexp(x, np.clip(e.astype(I64), -400, 400).astype(I32)).astype(x.dtype)


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


def _mad32(a, b, c):
    return ((a * b).astype(F32) + c).astype(F32)


def _fixup(q, d, n, dt):
    """v_div_fixup: special cases of n/d around the quotient estimate q."""
    sign = np.signbit(d) ^ np.signbit(n)
    inf = dt.type(np.inf)
    with np.errstate(all="ignore"):
        _, en = np.frexp(n)
        _, ed = np.frexp(d)
        lim = -150 if dt == F32 else -1075
        r = np.where(sign, -np.abs(q), np.abs(q))
        r = np.where((en - ed < lim) & (n != 0) & np.isfinite(n) & np.isfinite(d) & (d != 0),
                     np.where(sign, -dt.type(0), dt.type(0)), r)
        r = np.where(np.isinf(d) | (n == 0), np.where(sign, -dt.type(0), dt.type(0)), r)
        r = np.where((d == 0) | np.isinf(n), np.where(sign, -inf, inf), r)
        r = np.where(((d == 0) & (n == 0)) | (np.isinf(d) & np.isinf(n)), dt.type(np.nan), r)
        r = np.where(np.isnan(d), d, r)
        r = np.where(np.isnan(n), n, r)
    return r.astype(dt)


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
    "v_lshlrev_b16": ("u16", ("u16", "u16"), lambda a, b: b << (a & U16(15))),
    "v_lshrrev_b16": ("u16", ("u16", "u16"), lambda a, b: b >> (a & U16(15))),
    "v_ashrrev_i16": ("u16", ("u16", "i16"), lambda a, b: b >> (a & U16(15)).astype(np.int16)),
    "v_max_u16": ("u16", ("u16", "u16"), np.maximum),
    "v_min_u16": ("u16", ("u16", "u16"), np.minimum),
    "v_max_i16": ("u16", ("i16", "i16"), np.maximum),
    "v_min_i16": ("u16", ("i16", "i16"), np.minimum),
    # float32
    "v_add_f32": ("f32", ("f32", "f32"), lambda a, b: a + b),
    "v_sub_f32": ("f32", ("f32", "f32"), lambda a, b: a - b),
    "v_subrev_f32": ("f32", ("f32", "f32"), lambda a, b: b - a),
    "v_mul_f32": ("f32", ("f32", "f32"), lambda a, b: a * b),
    "v_mul_legacy_f32": ("f32", ("f32", "f32"), _mul_legacy),
    "v_min_f32": ("f32", ("f32", "f32"), nx.fmin),
    "v_max_f32": ("f32", ("f32", "f32"), nx.fmax),
    "v_min3_f32": ("f32", ("f32", "f32", "f32"), lambda a, b, c: nx.fmin(nx.fmin(a, b), c)),
    "v_max3_f32": ("f32", ("f32", "f32", "f32"), lambda a, b, c: nx.fmax(nx.fmax(a, b), c)),
    "v_med3_f32": ("f32", ("f32", "f32", "f32"), nx.fmed3),
    "v_fma_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_fmamk_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_fmaak_f32": ("f32", ("f32", "f32", "f32"), nx.fma32),
    "v_mad_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_mad_legacy_f32": ("f32", ("f32", "f32", "f32"), lambda a, b, c: (_mul_legacy(a, b) + c).astype(F32)),
    "v_madmk_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_madak_f32": ("f32", ("f32", "f32", "f32"), _mad32),
    "v_ldexp_f32": ("f32", ("f32", "i32"), _ldexp),
    "v_exp_f32": ("f32", ("f32",), _via64(np.exp2, F32)),
    "v_log_f32": ("f32", ("f32",), _via64(np.log2, F32)),
    "v_exp_legacy_f32": ("f32", ("f32",), _via64(np.exp2, F32)),
    "v_log_legacy_f32": ("f32", ("f32",), _via64(np.log2, F32)),
    "v_rcp_f32": ("f32", ("f32",), _via64(lambda x: 1.0 / x, F32)),
    "v_rcp_iflag_f32": ("f32", ("f32",), _via64(lambda x: 1.0 / x, F32)),
    "v_rsq_f32": ("f32", ("f32",), _via64(lambda x: 1.0 / np.sqrt(x), F32)),
    "v_sqrt_f32": ("f32", ("f32",), _via64(np.sqrt, F32)),
    "v_sin_f32": ("f32", ("f32",), _via64(lambda x: np.sin(x * (2 * np.pi)), F32)),
    "v_cos_f32": ("f32", ("f32",), _via64(lambda x: np.cos(x * (2 * np.pi)), F32)),
    "v_fract_f32": ("f32", ("f32",), _fract),
    "v_trunc_f32": ("f32", ("f32",), np.trunc),
    "v_ceil_f32": ("f32", ("f32",), np.ceil),
    "v_floor_f32": ("f32", ("f32",), np.floor),
    "v_rndne_f32": ("f32", ("f32",), np.rint),
    "v_frexp_mant_f32": ("f32", ("f32",), nx.frexp_mant),
    "v_frexp_exp_i32_f32": ("b32", ("f32",), nx.frexp_exp),
    "v_div_fixup_f32": ("f32", ("f32", "f32", "f32"), lambda q, d, n: _fixup(q, d, n, np.dtype(F32))),
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
    "v_fma_f16": ("f16", ("f16", "f16", "f16"), nx.fma16),
    "v_ldexp_f16": ("f16", ("f16", "i16"), _ldexp),
    "v_exp_f16": ("f16", ("f16",), _via64(np.exp2, F16)),
    "v_log_f16": ("f16", ("f16",), _via64(np.log2, F16)),
    "v_rcp_f16": ("f16", ("f16",), _via64(lambda x: 1.0 / x, F16)),
    "v_rsq_f16": ("f16", ("f16",), _via64(lambda x: 1.0 / np.sqrt(x), F16)),
    "v_sqrt_f16": ("f16", ("f16",), _via64(np.sqrt, F16)),
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
    "v_ldexp_f64": ("f64", ("f64", "i32"), _ldexp),
    "v_rcp_f64": ("f64", ("f64",), lambda a: np.divide(1.0, a)),
    "v_rsq_f64": ("f64", ("f64",), lambda a: 1.0 / np.sqrt(a)),
    "v_sqrt_f64": ("f64", ("f64",), np.sqrt),
    "v_fract_f64": ("f64", ("f64",), _fract),
    "v_trunc_f64": ("f64", ("f64",), np.trunc),
    "v_ceil_f64": ("f64", ("f64",), np.ceil),
    "v_floor_f64": ("f64", ("f64",), np.floor),
    "v_rndne_f64": ("f64", ("f64",), np.rint),
    "v_frexp_mant_f64": ("f64", ("f64",), nx.frexp_mant),
    "v_frexp_exp_i32_f64": ("b32", ("f64",), nx.frexp_exp),
    "v_div_fixup_f64": ("f64", ("f64", "f64", "f64"), lambda q, d, n: _fixup(q, d, n, np.dtype(F64))),
}
# Accumulating forms: the destination is also the last source.
ACCUM = {"v_mac_f32": "v_mad_f32", "v_fmac_f32": "v_fma_f32", "v_fmac_f64": "v_fma_f64",
         "v_mac_f16": None, "v_fmac_f16": None}
NO_FLUSH = {"b32", "b64", "u16", "u32", "i32"}


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


def _flush_bits(mode: int, width: int) -> tuple[bool, bool]:
    """(flush inputs, flush outputs) of the MODE register's denormal field."""
    field = (mode >> 4) & 3 if width == 32 else (mode >> 6) & 3
    return field in (0, 2), field in (0, 1)


_FTZ = {32: nx.ftz32, 64: nx.ftz64, 16: nx.ftz16}


def build(ins: Insn, name: str | None = None) -> Decoded:
    """The generic VOP1/VOP2/VOP3 builder for rows of :data:`OPS`."""
    name = name or ins.base
    accum = name in ACCUM
    if accum:
        if ACCUM[name] is None:
            raise ins.fail()
        name = ACCUM[name]
    dst_t, src_ts, fn = OPS[name]
    ops = ins.ops
    nsrc = len(src_ts)
    srcs_ops = ops[1:1 + nsrc] if not accum else ops[1:] + [ops[0]]
    if len(srcs_ops) != nsrc:
        raise ins.fail(f"expected {nsrc} sources, got {len(srcs_ops)}")
    dpp = Dpp(ins) if ins.encoding == "dpp" else None
    readers = [source(ins, o, t, i, dpp=dpp) for i, (o, t) in enumerate(zip(srcs_ops, src_ts))]
    write = result_writer(ins, ops[0], dst_t, dpp=dpp)
    clamp = bool(ins.mods.get("clamp"))
    om = 1.0
    if "mul" in ins.mods:
        om = float(ins.mods["mul"])
    elif "div" in ins.mods:
        om = 1.0 / float(ins.mods["div"])
    is_float = dst_t[0] == "f"
    float_srcs = [i for i, t in enumerate(src_ts) if t[0] == "f"]
    if clamp and not is_float:
        raise ins.fail("integer clamp")
    fwidth = int((src_ts[float_srcs[0]] if float_srcs else dst_t)[1:])
    ftz_in = _FTZ[fwidth]
    ftz_out = _FTZ[int(dst_t[1:])] if is_float else None
    conv = name.startswith("v_cvt") or name in ("v_mov_b32", "v_mov_b64")
    post = is_float and (clamp or om != 1.0)

    if len(readers) == 1:
        r0 = readers[0]

        def run1(c):
            a = r0(c)
            if float_srcs and not conv:
                fi, fo = _flush_bits(c.st.mode, fwidth)
                if fi:
                    a = ftz_in(a)
            with np.errstate(all="ignore"):
                res = fn(a)
            if is_float:
                res = _post(c, res, om, clamp, post, ftz_out, int(dst_t[1:]))
            write(c, _to_bits(res, dst_t))
        return op(run1)

    def run(c):
        args = [r(c) for r in readers]
        if float_srcs:
            fi, fo = _flush_bits(c.st.mode, fwidth)
            if fi:
                for i in float_srcs:
                    args[i] = ftz_in(args[i])
        with np.errstate(all="ignore"):
            res = fn(*args)
        if is_float:
            res = _post(c, res, om, clamp, post, ftz_out, int(dst_t[1:]))
        write(c, _to_bits(res, dst_t))
    return op(run)


def _post(c, res, om, clamp, post, ftz_out, width):
    if post:
        with np.errstate(all="ignore"):
            if om != 1.0:
                res = (res * res.dtype.type(om)).astype(res.dtype)
            if clamp:
                res = nx.clamp01(np.asarray(res))
    if _flush_bits(c.st.mode, width)[1]:
        res = ftz_out(res)
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


def _exponent(x):
    return np.frexp(x)[1] - 1


@register("v_div_scale_f32", "v_div_scale_f64")
def _div_scale(ins: Insn) -> Decoded:
    f64 = ins.base.endswith("f64")
    t = "f64" if f64 else "f32"
    dt = F64 if f64 else F32
    sdst = _mask_out_reg(ins, 1)
    r0, r1, r2 = (source(ins, ins.ops[2 + i], t, i) for i in range(3))
    write = result_writer(ins, ins.ops[0], t)
    big, scale, tiny = (768, 128, 53) if f64 else (96, 64, 23)
    mn = np.finfo(dt).tiny

    def run(c):
        s0, s1, s2 = (np.broadcast_to(r(c), (c.w, 64)) for r in (r0, r1, r2))
        with np.errstate(all="ignore"):
            vcc = np.zeros((c.w, 64), bool)
            d = s0.copy()
            e1, e2 = _exponent(s1), _exponent(s2)
            undecided = np.ones((c.w, 64), bool)

            def case(cond, val=None, flag=False):
                nonlocal d, vcc, undecided
                hit = undecided & cond
                if val is not None:
                    d = np.where(hit, val, d)
                if flag:
                    vcc = vcc | hit
                undecided = undecided & ~cond
            up = np.ldexp(s0, scale).astype(dt)
            down = np.ldexp(s0, -scale).astype(dt)
            rcp_den = (1.0 / s1.astype(F64))
            q = (s2 / s1).astype(dt)
            is_den = lambda x: (x != 0) & (np.abs(x) < mn)
            case((s2 == 0) | (s1 == 0), dt.type(np.nan) if hasattr(dt, "type") else np.nan)
            hit = undecided & (e2 - e1 >= big)
            d = np.where(hit & (s0 == s1), up, d)
            vcc |= hit
            undecided &= ~hit
            case(is_den(s1), up)
            hit = undecided & (np.abs(rcp_den) < np.finfo(F64).tiny) & is_den(q)
            d = np.where(hit & (s0 == s1), up, d)
            vcc |= hit
            undecided &= ~hit
            case(np.abs(rcp_den) < np.finfo(F64).tiny, down)
            hit = undecided & is_den(q)
            d = np.where(hit & (s0 == s2), up, d)
            vcc |= hit
            undecided &= ~hit
            case(e2 + (1023 if f64 else 127) <= tiny, up)
        write(c, _to_bits(d.astype(dt), t))
        c.lane_mask_write(sdst, vcc)
    return op(run)


@register("v_div_fmas_f32", "v_div_fmas_f64")
def _div_fmas(ins: Insn) -> Decoded:
    from asmevo.emu.state import VCC
    f64 = ins.base.endswith("f64")
    t = "f64" if f64 else "f32"
    r0, r1, r2 = (source(ins, ins.ops[1 + i], t, i) for i in range(3))
    write = result_writer(ins, ins.ops[0], t)
    fma = nx.fma64 if f64 else nx.fma32
    bias, up = (1023, 128) if f64 else (127, 64)

    def run(c):
        a, b, s2 = r0(c), r1(c), r2(c)
        r = fma(a, b, s2)
        vcc = c.lane_mask_read(VCC)
        if vcc.any():
            e2 = np.frexp(np.broadcast_to(s2, r.shape))[1] - 1 + bias
            scaled = np.where(e2 > bias, np.ldexp(r, up), np.ldexp(r, -up)).astype(r.dtype)
            r = np.where(vcc, scaled, r)
        write(c, _to_bits(r, t))
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
