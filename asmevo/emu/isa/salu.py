"""Scalar ALU (SOP1, SOP2, SOPC, SOPK) and program control (SOPP).

Values are per-wave arrays of shape (w,): uint32 for 32-bit operands, uint64
for 64-bit ones. SCC is set exactly as the ISA says (carry, signed overflow, or
"result != 0"); anything the table does not list raises
:class:`UnsupportedInstruction` at decode.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import fpmode
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader
from asmevo.emu.machine.state import EXEC, VCC

U32, U64, I32, I64 = np.uint32, np.uint64, np.int32, np.int64
M32 = U64(0xFFFFFFFF)


def _src(ins: Insn, i: int, width: int = 32):
    return raw_reader(ins.ops[i], width, vector=False)


def _dst_writer(ins: Insn, width: int):
    d = ins.ops[0]
    if d.kind != "s":
        raise ins.fail(f"destination {d.text} is not an SGPR")
    r = d.reg
    if width == 64:
        return lambda c, val: c.sw64(r, val)
    return lambda c, val: c.sw(r, np.asarray(val).astype(U32))


# -- SOP2 / SOP1 arithmetic ------------------------------------------------
# fn(a, b, scc) -> (result, scc or None); a, b are uint64 (zero-extended 32-bit values
# for 32-bit ops) so carries are visible.

def _u(a):
    return a.astype(U64)


def _s32(a):
    return a.astype(U32).view(I32).astype(I64)


def _nz(r):
    return r != 0


def _sh5(b):
    return b & U64(31)


def _sh6(b):
    return b & U64(63)


def _bfe32(a, b, signed):
    off = b & U64(31)
    width = (b >> U64(16)) & U64(127)
    val = (a >> off) & ((U64(1) << np.minimum(width, U64(32))) - U64(1))
    if signed:
        w = np.minimum(width, U64(32)).astype(I64)
        v = val.astype(I64)
        sign = np.where(w > 0, (v >> np.maximum(w - 1, 0)) & 1, 0)
        v = np.where(sign == 1, v - (I64(1) << w), v)
        return (v & I64(0xFFFFFFFF)).astype(U64)
    return val & M32


def _bfe64(a, b, signed):
    off = b & U64(63)
    width = np.minimum((b >> U64(16)) & U64(127), U64(64))
    mask = np.where(width >= 64, U64(0xFFFFFFFFFFFFFFFF), (U64(1) << (width & U64(63))) - U64(1))
    val = (a >> off) & mask
    if signed:
        w = width.astype(I64)
        sh = (64 - w) & 63
        v = np.where(w > 0, (val.view(I64) << sh) >> sh, 0)
        return v.astype(I64).view(U64) if isinstance(v, np.ndarray) else U64(v)
    return val


SOP2_32 = {
    "s_add_u32": lambda a, b, s: ((a + b) & M32, (a + b) > M32),
    "s_addc_u32": lambda a, b, s: ((a + b + s) & M32, (a + b + s) > M32),
    "s_sub_u32": lambda a, b, s: ((a - b) & M32, b > a),
    "s_subb_u32": lambda a, b, s: ((a - b - s) & M32, (b + s) > a),
    "s_add_i32": lambda a, b, s: _iadd(_s32(a), _s32(b)),
    "s_sub_i32": lambda a, b, s: _iadd(_s32(a), -_s32(b)),
    "s_mul_i32": lambda a, b, s: (((_s32(a) * _s32(b)) & I64(0xFFFFFFFF)).astype(U64), None),
    "s_mul_hi_u32": lambda a, b, s: ((a * b) >> U64(32), None),
    "s_mul_hi_i32": lambda a, b, s: (((_s32(a) * _s32(b)) >> I64(32)).astype(U64) & M32, None),
    "s_and_b32": lambda a, b, s: _bits(a & b),
    "s_or_b32": lambda a, b, s: _bits(a | b),
    "s_xor_b32": lambda a, b, s: _bits(a ^ b),
    "s_andn2_b32": lambda a, b, s: _bits(a & ~b & M32),
    "s_orn2_b32": lambda a, b, s: _bits((a | ~b) & M32),
    "s_nand_b32": lambda a, b, s: _bits(~(a & b) & M32),
    "s_nor_b32": lambda a, b, s: _bits(~(a | b) & M32),
    "s_xnor_b32": lambda a, b, s: _bits(~(a ^ b) & M32),
    "s_lshl_b32": lambda a, b, s: _bits((a << _sh5(b)) & M32),
    "s_lshr_b32": lambda a, b, s: _bits(a >> _sh5(b)),
    "s_ashr_i32": lambda a, b, s: _bits((_s32(a) >> _sh5(b).astype(I64)).astype(U64) & M32),
    "s_lshl1_add_u32": lambda a, b, s: _shadd(a, b, 1),
    "s_lshl2_add_u32": lambda a, b, s: _shadd(a, b, 2),
    "s_lshl3_add_u32": lambda a, b, s: _shadd(a, b, 3),
    "s_lshl4_add_u32": lambda a, b, s: _shadd(a, b, 4),
    "s_bfm_b32": lambda a, b, s: ((((U64(1) << _sh5(a)) - U64(1)) << _sh5(b)) & M32, None),
    "s_bfe_u32": lambda a, b, s: _bits(_bfe32(a, b, False)),
    "s_bfe_i32": lambda a, b, s: _bits(_bfe32(a, b, True)),
    "s_min_i32": lambda a, b, s: (np.where(_s32(a) < _s32(b), a, b), _s32(a) < _s32(b)),
    "s_min_u32": lambda a, b, s: (np.where(a < b, a, b), a < b),
    "s_max_i32": lambda a, b, s: (np.where(_s32(a) > _s32(b), a, b), _s32(a) > _s32(b)),
    "s_max_u32": lambda a, b, s: (np.where(a > b, a, b), a > b),
    "s_cselect_b32": lambda a, b, s: (np.where(s.astype(bool), a, b), None),
    "s_absdiff_i32": lambda a, b, s: _bits(np.abs(_s32(a) - _s32(b)).astype(U64) & M32),
    "s_pack_ll_b32_b16": lambda a, b, s: ((a & U64(0xFFFF)) | ((b & U64(0xFFFF)) << U64(16)), None),
    "s_pack_lh_b32_b16": lambda a, b, s: ((a & U64(0xFFFF)) | (b & U64(0xFFFF0000)), None),
    "s_pack_hh_b32_b16": lambda a, b, s: ((a >> U64(16)) | (b & U64(0xFFFF0000)), None),
}

SOP2_64 = {   # (srcA width, srcB width)
    "s_and_b64": (64, 64, lambda a, b, s: _bits(a & b)),
    "s_or_b64": (64, 64, lambda a, b, s: _bits(a | b)),
    "s_xor_b64": (64, 64, lambda a, b, s: _bits(a ^ b)),
    "s_andn2_b64": (64, 64, lambda a, b, s: _bits(a & ~b)),
    "s_orn2_b64": (64, 64, lambda a, b, s: _bits(a | ~b)),
    "s_nand_b64": (64, 64, lambda a, b, s: _bits(~(a & b))),
    "s_nor_b64": (64, 64, lambda a, b, s: _bits(~(a | b))),
    "s_xnor_b64": (64, 64, lambda a, b, s: _bits(~(a ^ b))),
    "s_lshl_b64": (64, 32, lambda a, b, s: _bits(a << _sh6(b))),
    "s_lshr_b64": (64, 32, lambda a, b, s: _bits(a >> _sh6(b))),
    "s_ashr_i64": (64, 32, lambda a, b, s: _bits((a.view(I64) >> _sh6(b).astype(I64)).view(U64))),
    "s_bfm_b64": (32, 32, lambda a, b, s: (((U64(1) << _sh6(a)) - U64(1)) << _sh6(b), None)),
    "s_bfe_u64": (64, 32, lambda a, b, s: _bits(_bfe64(a, b, False))),
    "s_bfe_i64": (64, 32, lambda a, b, s: _bits(_bfe64(a, b, True))),
    "s_cselect_b64": (64, 64, lambda a, b, s: (np.where(s.astype(bool), a, b), None)),
}


def _bits(r):
    return r, r != 0


def _iadd(a, b):
    r = a + b
    ov = (r > 0x7FFFFFFF) | (r < -0x80000000)
    return (r & I64(0xFFFFFFFF)).astype(U64), ov


def _shadd(a, b, n):
    r = (a << U64(n)) + b
    return r & M32, (r > M32) | ((a >> U64(32 - n)) != 0)


@register(*SOP2_32)
def _sop2_32(ins: Insn) -> Decoded:
    fn = SOP2_32[ins.base]
    ra, rb = _src(ins, 1), _src(ins, 2)
    wr = _dst_writer(ins, 32)
    uses_scc = ins.base in ("s_addc_u32", "s_subb_u32", "s_cselect_b32")

    def run(c):
        s = c.scc().astype(U64) if uses_scc else None
        r, scc = fn(_u(ra(c)), _u(rb(c)), s)
        wr(c, r & M32)
        if scc is not None:
            c.set_scc(scc)
    return op(run)


@register(*SOP2_64)
def _sop2_64(ins: Insn) -> Decoded:
    wa, wb, fn = SOP2_64[ins.base]
    ra, rb = _src(ins, 1, wa), _src(ins, 2, wb)
    wr = _dst_writer(ins, 64)
    uses_scc = ins.base == "s_cselect_b64"

    def run(c):
        s = c.scc().astype(U64) if uses_scc else None
        r, scc = fn(_u(ra(c)), _u(rb(c)), s)
        wr(c, r)
        if scc is not None:
            c.set_scc(scc)
    return op(run)


# -- SOP1 -----------------------------------------------------------------

def _popc(x):
    x = x.astype(U64)
    c = np.zeros(x.shape, I64)
    for i in range(64):
        c += ((x >> U64(i)) & U64(1)).astype(I64)
    return c


def _ff1(x, width):
    """Index of the lowest set bit, or -1."""
    x = np.asarray(x).astype(U64)
    out = np.full(x.shape, -1, I64)
    for i in range(width - 1, -1, -1):
        out = np.where(((x >> U64(i)) & U64(1)) == 1, i, out)
    return out


def _flbit(x, width):
    """Index of the highest set bit counted from the MSB, or -1."""
    x = x.astype(U64)
    out = np.full(x.shape, -1, I64)
    for i in range(width - 1, -1, -1):
        hit = (out < 0) & (((x >> U64(i)) & U64(1)) == 1)
        out = np.where(hit, width - 1 - i, out)
    return out


def _brev(x, width):
    x = x.astype(U64)
    out = np.zeros(x.shape, U64)
    for i in range(width):
        out |= ((x >> U64(i)) & U64(1)) << U64(width - 1 - i)
    return out


def _neg1(x):
    return (x.astype(I64) & I64(0xFFFFFFFF)).astype(U64)


SOP1 = {  # name: (dst width, src width, fn(a, scc) -> (r, scc|None))
    "s_mov_b32": (32, 32, lambda a, s: (a, None)),
    "s_mov_b64": (64, 64, lambda a, s: (a, None)),
    "s_cmov_b32": (32, 32, None),
    "s_cmov_b64": (64, 64, None),
    "s_not_b32": (32, 32, lambda a, s: _bits(~a & M32)),
    "s_not_b64": (64, 64, lambda a, s: _bits(~a)),
    "s_brev_b32": (32, 32, lambda a, s: (_brev(a, 32), None)),
    "s_brev_b64": (64, 64, lambda a, s: (_brev(a, 64), None)),
    "s_bcnt0_i32_b32": (32, 32, lambda a, s: _bits((32 - _popc(a)).astype(U64))),
    "s_bcnt0_i32_b64": (32, 64, lambda a, s: _bits((64 - _popc(a)).astype(U64))),
    "s_bcnt1_i32_b32": (32, 32, lambda a, s: _bits(_popc(a).astype(U64))),
    "s_bcnt1_i32_b64": (32, 64, lambda a, s: _bits(_popc(a).astype(U64))),
    "s_ff0_i32_b32": (32, 32, lambda a, s: (_neg1(_ff1(~a & M32, 32)), None)),
    "s_ff0_i32_b64": (32, 64, lambda a, s: (_neg1(_ff1(~a, 64)), None)),
    "s_ff1_i32_b32": (32, 32, lambda a, s: (_neg1(_ff1(a, 32)), None)),
    "s_ff1_i32_b64": (32, 64, lambda a, s: (_neg1(_ff1(a, 64)), None)),
    "s_flbit_i32_b32": (32, 32, lambda a, s: (_neg1(_flbit(a, 32)), None)),
    "s_flbit_i32_b64": (32, 64, lambda a, s: (_neg1(_flbit(a, 64)), None)),
    "s_flbit_i32": (32, 32, lambda a, s: (_neg1(_flbit_signed(a)), None)),
    "s_sext_i32_i8": (32, 32, lambda a, s: ((a.astype(U32).astype(np.uint8).view(np.int8)
                                             .astype(I64) & I64(0xFFFFFFFF)).astype(U64), None)),
    "s_sext_i32_i16": (32, 32, lambda a, s: ((a.astype(U32).astype(np.uint16).view(np.int16)
                                              .astype(I64) & I64(0xFFFFFFFF)).astype(U64), None)),
    "s_abs_i32": (32, 32, lambda a, s: _bits((np.abs(_s32(a)) & I64(0xFFFFFFFF)).astype(U64))),
    "s_quadmask_b32": (32, 32, lambda a, s: _bits(_quadmask(a, 8))),
    "s_quadmask_b64": (64, 64, lambda a, s: _bits(_quadmask(a, 16))),
    "s_wqm_b32": (32, 32, lambda a, s: _bits(_wqm(a, 8))),
    "s_wqm_b64": (64, 64, lambda a, s: _bits(_wqm(a, 16))),
}


def _flbit_signed(a):
    """Position (from the MSB) of the first bit that differs from the sign bit, or -1."""
    v = _s32(a)
    x = np.where(v < 0, ~v, v).astype(U64) & M32
    return _flbit(x, 32)


def _quadmask(a, quads):
    out = np.zeros(a.shape, U64)
    for i in range(quads):
        out |= (((a >> U64(4 * i)) & U64(15)) != 0).astype(U64) << U64(i)
    return out


def _wqm(a, quads):
    out = np.zeros(a.shape, U64)
    for i in range(quads):
        hit = ((a >> U64(4 * i)) & U64(15)) != 0
        out |= np.where(hit, U64(15), U64(0)) << U64(4 * i)
    return out


@register(*SOP1)
def _sop1(ins: Insn) -> Decoded:
    dw, sw, fn = SOP1[ins.base]
    ra = _src(ins, 1, sw)
    wr = _dst_writer(ins, dw)
    if fn is None:      # s_cmov: write only where SCC
        r = ins.ops[0].reg

        def cmov(c):
            old = c.sr64(r) if dw == 64 else c.sr(r).astype(U64)
            val = np.where(c.scc(), _u(ra(c)), old)
            wr(c, val)
        return op(cmov)

    def run(c):
        r, scc = fn(_u(ra(c)), None)
        wr(c, r if dw == 64 else (r & M32))
        if scc is not None:
            c.set_scc(scc)
    return op(run)


SAVEEXEC = {
    "s_and_saveexec_b64": lambda s, e: s & e,
    "s_or_saveexec_b64": lambda s, e: s | e,
    "s_xor_saveexec_b64": lambda s, e: s ^ e,
    "s_andn2_saveexec_b64": lambda s, e: s & ~e,
    "s_orn2_saveexec_b64": lambda s, e: s | ~e,
    "s_nand_saveexec_b64": lambda s, e: ~(s & e),
    "s_nor_saveexec_b64": lambda s, e: ~(s | e),
    "s_xnor_saveexec_b64": lambda s, e: ~(s ^ e),
    "s_andn1_saveexec_b64": lambda s, e: ~s & e,
    "s_orn1_saveexec_b64": lambda s, e: ~s | e,
    "s_andn1_wrexec_b64": lambda s, e: ~s & e,
    "s_andn2_wrexec_b64": lambda s, e: s & ~e,
}


@register(*SAVEEXEC)
def _saveexec(ins: Insn) -> Decoded:
    fn = SAVEEXEC[ins.base]
    ra = _src(ins, 1, 64)
    wr = _dst_writer(ins, 64)
    wrexec = "wrexec" in ins.base

    def run(c):
        e = c.sr64(EXEC)
        s = ra(c)
        new = fn(s, e)
        c.sw64(EXEC, new)
        wr(c, new if wrexec else e)
        c.set_scc(new != 0)
    return op(run)


@register("s_movk_i32", "s_cmovk_i32", "s_addk_i32", "s_mulk_i32")
def _sopk(ins: Insn) -> Decoded:
    imm = int(ins.raw_ops[1], 0)
    imm = imm - 0x10000 if imm >= 0x8000 else imm
    r = ins.ops[0].reg
    name = ins.base
    immv = I64(imm)

    def run(c):
        if name == "s_movk_i32":
            c.sw(r, np.full(c.w, imm & 0xFFFFFFFF, U32))
        elif name == "s_cmovk_i32":
            c.sw(r, np.where(c.scc(), U32(imm & 0xFFFFFFFF), c.sr(r)))
        elif name == "s_addk_i32":
            res, ov = _iadd(_s32(c.sr(r)), immv)
            c.sw(r, res.astype(U32))
            c.set_scc(ov)
        else:
            c.sw(r, ((_s32(c.sr(r)) * immv) & I64(0xFFFFFFFF)).astype(U32))
    return op(run)


# -- compares ---------------------------------------------------------------
_CMP = {"eq": np.equal, "lg": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
        "lt": np.less, "le": np.less_equal}


@register(*[f"s_cmp_{c}_{t}" for c in _CMP for t in ("i32", "u32")], "s_cmp_eq_u64",
          "s_cmp_lg_u64")
def _scmp(ins: Insn) -> Decoded:
    _, _, cc, t = ins.base.split("_")
    width = 64 if t == "u64" else 32
    ra, rb = _src(ins, 0, width), _src(ins, 1, width)
    f = _CMP[cc]
    if t == "i32":
        return op(lambda c: c.set_scc(f(_s32(ra(c)), _s32(rb(c)))))
    return op(lambda c: c.set_scc(f(_u(ra(c)), _u(rb(c)))))


@register(*[f"s_cmpk_{c}_{t}" for c in _CMP for t in ("i32", "u32")])
def _scmpk(ins: Insn) -> Decoded:
    _, _, cc, t = ins.base.split("_")
    ra = _src(ins, 0)
    imm = int(ins.raw_ops[1], 0) & 0xFFFF
    f = _CMP[cc]
    if t == "i32":
        immv = I64(imm - 0x10000 if imm >= 0x8000 else imm)
        return op(lambda c: c.set_scc(f(_s32(ra(c)), immv)))
    return op(lambda c: c.set_scc(f(_u(ra(c)), U64(imm))))


@register("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64")
def _bitcmp(ins: Insn) -> Decoded:
    width = 64 if ins.base.endswith("64") else 32
    ra, rb = _src(ins, 0, width), _src(ins, 1)
    want = U64(1 if "bitcmp1" in ins.base else 0)
    m = U64(width - 1)
    return op(lambda c: c.set_scc(((_u(ra(c)) >> (_u(rb(c)) & m)) & U64(1)) == want))


@register("s_bitset0_b32", "s_bitset1_b32", "s_bitset0_b64", "s_bitset1_b64")
def _bitset(ins: Insn) -> Decoded:
    width = 64 if ins.base.endswith("64") else 32
    r = ins.ops[0].reg
    rb = _src(ins, 1)
    one = "bitset1" in ins.base

    def run(c):
        old = c.sr64(r) if width == 64 else _u(c.sr(r))
        bit = U64(1) << (_u(rb(c)) & U64(width - 1))
        new = old | bit if one else old & ~bit
        if width == 64:
            c.sw64(r, new)
        else:
            c.sw(r, (new & M32).astype(U32))
    return op(run)


# -- program control -------------------------------------------------------

def _nothing(c):
    return None


@register("s_nop", "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt",
          "s_waitcnt_expcnt", "s_sleep", "s_setprio", "s_dcache_wb", "s_dcache_inv",
          "s_icache_inv", "s_ttracedata", "s_sethalt", "buffer_wbl2", "buffer_inv",
          "buffer_wbinvl1", "buffer_wbinvl1_vol", "s_dcache_wb_vol", "s_dcache_inv_vol")
def _noop(ins: Insn) -> Decoded:
    return op(_nothing)


@register("s_endpgm")
def _endpgm(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="end")


@register("s_barrier")
def _barrier(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="barrier")


@register("s_branch")
def _branch(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="branch", target_label=ins.raw_ops[0])


_CONDS = {
    "s_cbranch_scc0": lambda c: ~c.scc(),
    "s_cbranch_scc1": lambda c: c.scc().copy(),
    "s_cbranch_vccz": lambda c: (c.sr(VCC) | c.sr(VCC + 1)) == 0,
    "s_cbranch_vccnz": lambda c: (c.sr(VCC) | c.sr(VCC + 1)) != 0,
    "s_cbranch_execz": lambda c: c.st.nactive[c.idx] == 0,
    "s_cbranch_execnz": lambda c: c.st.nactive[c.idx] != 0,
}


@register(*_CONDS)
def _cbranch(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="cbranch", cond=_CONDS[ins.base],
                   target_label=ins.raw_ops[0])


@register("s_getpc_b64")
def _getpc(ins: Insn) -> Decoded:
    r = ins.ops[0].reg
    return Decoded(0, "", "", None, ctl="getpc", extra={"dst": r})


@register("s_setpc_b64")
def _setpc(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="setpc", extra={"src": _src(ins, 0, 64)})


@register("s_swappc_b64")
def _swappc(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="swappc",
                   extra={"dst": ins.ops[0].reg, "src": _src(ins, 1, 64)})


@register("s_trap")
def _trap(ins: Insn) -> Decoded:
    return Decoded(0, "", "", None, ctl="trap")


# -- hardware registers -----------------------------------------------------
HWREG_IDS = {"HW_REG_MODE": 1, "HW_REG_STATUS": 2, "HW_REG_TRAPSTS": 3, "HW_REG_HW_ID": 4,
             "HW_REG_GPR_ALLOC": 5, "HW_REG_LDS_ALLOC": 6, "HW_REG_IB_STS": 7,
             "HW_REG_SH_MEM_BASES": 15, "HW_REG_XCC_ID": 20}


def _hwreg(ins: Insn, text: str) -> tuple[int, int, int]:
    t = text.strip()
    if not t.startswith("hwreg(") or not t.endswith(")"):
        raise ins.fail(f"bad hwreg operand {text}")
    parts = [p.strip() for p in t[6:-1].split(",")]
    reg = HWREG_IDS.get(parts[0]) if not parts[0].isdigit() else int(parts[0])
    if reg is None:
        raise ins.fail(f"hardware register {parts[0]}")
    off = int(parts[1], 0) if len(parts) > 1 else 0
    size = int(parts[2], 0) if len(parts) > 2 else 32
    return reg, off, size


@register("s_getreg_b32")
def _getreg(ins: Insn) -> Decoded:
    reg, off, size = _hwreg(ins, ins.raw_ops[1])
    r = ins.ops[0].reg
    mask = (1 << size) - 1 if size < 32 else 0xFFFFFFFF

    def run(c):
        val = c.launch.hwreg_value(c, reg)
        c.sw(r, ((val >> U64(off)) & U64(mask)).astype(U32))
    return op(run)


@register("s_setreg_b32", "s_setreg_imm32_b32")
def _setreg(ins: Insn) -> Decoded:
    reg, off, size = _hwreg(ins, ins.raw_ops[0])
    if reg != HWREG_IDS["HW_REG_MODE"]:
        raise ins.fail("only HW_REG_MODE can be written")
    src = ins.ops[1]
    ra = raw_reader(src, 32, vector=False)
    mask = ((1 << size) - 1) << off

    def run(c):   # MODE is per wave (asmevo.emu.numerics.fpmode)
        vals = _u(np.broadcast_to(ra(c), (c.w,))).astype(np.int64)
        old = fpmode.wave_modes(c)
        new = (old & ~mask) | ((vals << off) & mask)
        why = fpmode.setreg_problem(mask, new)
        if why is not None:
            raise ins.fail(why)
        fpmode.set_mode(c, new)
    return op(run)
