"""Scalar ALU (SOP1, SOP2, SOPC, SOPK), scalar memory loads, and the instructions that
change no register (waits, NOPs, priorities) or only synchronize (barriers).

Each table mirrors :mod:`asmevo.emu.isa.salu`'s: a function of the sources (and SCC)
giving the result and the new SCC, or None where SCC is kept.
"""
from __future__ import annotations

from asmevo.emu.isa import salu
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import EXEC, Machine, dword_index
from asmevo.prove.rows import register
from asmevo.prove.sem_vector import _bfrev, popcount
from asmevo.prove.term import b2bv, bv, sext, zext
from asmevo.prove.z3env import z3

ULT, UGT, LSHR = z3.ULT, z3.UGT, z3.LShR


def _bits(r):
    return r, r != 0


def _add33(a, b, c=None):
    r = zext(a, 33) + zext(b, 33) + (zext(b2bv(c), 33) if c is not None else 0)
    return z3.Extract(31, 0, r), z3.Extract(32, 32, r) == 1


def _iadd(a, b):
    r = sext(a, 34) + sext(b, 34)
    return z3.Extract(31, 0, r), z3.Or(r > bv(0x7FFFFFFF, 34), r < bv(-0x80000000, 34))


def _shadd(a, b, n):
    r = (zext(a, 64) << n) + zext(b, 64)
    return z3.Extract(31, 0, r), z3.Or(UGT(r, bv(0xFFFFFFFF, 64)), LSHR(a, 32 - n) != 0)


def _bfe32(a, b, signed):
    off = zext(b & 31, 64)
    width = zext(LSHR(b, 16) & 127, 64)
    w = z3.If(UGT(width, 32), bv(32, 64), width)
    val = LSHR(zext(a, 64), off) & ((bv(1, 64) << w) - 1)
    if signed:
        neg = z3.And(w != 0, LSHR(val, w - 1) & 1 == 1)
        val = z3.If(neg, val - (bv(1, 64) << w), val)
    return z3.Extract(31, 0, val)


def _bfe64(a, b, signed):
    off = zext(b & 63, 64)
    width = zext(LSHR(b, 16) & 127, 64)
    width = z3.If(UGT(width, 64), bv(64, 64), width)
    mask = z3.If(z3.UGE(width, 64), bv(-1, 64), (bv(1, 64) << (width & 63)) - 1)
    val = LSHR(a, off) & mask
    if signed:
        sh = (64 - width) & 63
        val = z3.If(width != 0, (val << sh) >> sh, bv(0, 64))
    return val


def _sub_carry(a, b, s=None):
    bb = zext(b, 33) + (zext(b2bv(s), 33) if s is not None else 0)
    return a - b - (zext(b2bv(s), 32) if s is not None else 0), UGT(bb, zext(a, 33))


SOP2_32 = {
    "s_add_u32": lambda a, b, s: _add33(a, b),
    "s_addc_u32": lambda a, b, s: _add33(a, b, s),
    "s_sub_u32": lambda a, b, s: _sub_carry(a, b),
    "s_subb_u32": lambda a, b, s: _sub_carry(a, b, s),
    "s_add_i32": lambda a, b, s: _iadd(a, b),
    "s_sub_i32": lambda a, b, s: (lambda r: (z3.Extract(31, 0, r), z3.Or(
        r > bv(0x7FFFFFFF, 34), r < bv(-0x80000000, 34))))(sext(a, 34) - sext(b, 34)),
    "s_mul_i32": lambda a, b, s: (a * b, None),
    "s_mul_hi_u32": lambda a, b, s: (z3.Extract(63, 32, zext(a, 64) * zext(b, 64)), None),
    "s_mul_hi_i32": lambda a, b, s: (z3.Extract(63, 32, sext(a, 64) * sext(b, 64)), None),
    "s_and_b32": lambda a, b, s: _bits(a & b),
    "s_or_b32": lambda a, b, s: _bits(a | b),
    "s_xor_b32": lambda a, b, s: _bits(a ^ b),
    "s_andn2_b32": lambda a, b, s: _bits(a & ~b),
    "s_orn2_b32": lambda a, b, s: _bits(a | ~b),
    "s_nand_b32": lambda a, b, s: _bits(~(a & b)),
    "s_nor_b32": lambda a, b, s: _bits(~(a | b)),
    "s_xnor_b32": lambda a, b, s: _bits(~(a ^ b)),
    "s_lshl_b32": lambda a, b, s: _bits(a << (b & 31)),
    "s_lshr_b32": lambda a, b, s: _bits(LSHR(a, b & 31)),
    "s_ashr_i32": lambda a, b, s: _bits(a >> (b & 31)),
    "s_lshl1_add_u32": lambda a, b, s: _shadd(a, b, 1),
    "s_lshl2_add_u32": lambda a, b, s: _shadd(a, b, 2),
    "s_lshl3_add_u32": lambda a, b, s: _shadd(a, b, 3),
    "s_lshl4_add_u32": lambda a, b, s: _shadd(a, b, 4),
    "s_bfm_b32": lambda a, b, s: (((bv(1, 32) << (a & 31)) - 1) << (b & 31), None),
    "s_bfe_u32": lambda a, b, s: _bits(_bfe32(a, b, False)),
    "s_bfe_i32": lambda a, b, s: _bits(_bfe32(a, b, True)),
    "s_min_i32": lambda a, b, s: (z3.If(a < b, a, b), a < b),
    "s_min_u32": lambda a, b, s: (z3.If(ULT(a, b), a, b), ULT(a, b)),
    "s_max_i32": lambda a, b, s: (z3.If(a > b, a, b), a > b),
    "s_max_u32": lambda a, b, s: (z3.If(UGT(a, b), a, b), UGT(a, b)),
    "s_cselect_b32": lambda a, b, s: (z3.If(s, a, b), None),
    "s_absdiff_i32": lambda a, b, s: _bits(z3.Extract(31, 0, _abs(sext(a, 34) - sext(b, 34)))),
    "s_pack_ll_b32_b16": lambda a, b, s: (z3.Concat(z3.Extract(15, 0, b),
                                                    z3.Extract(15, 0, a)), None),
    "s_pack_lh_b32_b16": lambda a, b, s: (z3.Concat(z3.Extract(31, 16, b),
                                                    z3.Extract(15, 0, a)), None),
    "s_pack_hh_b32_b16": lambda a, b, s: (z3.Concat(z3.Extract(31, 16, b),
                                                    z3.Extract(31, 16, a)), None),
}


def _abs(x):
    return z3.If(x < 0, -x, x)


SOP2_64 = {   # (srcA width, srcB width, fn); the bitwise rows are the emulator's own
    **{n: salu.SOP2_64[n] for n in ("s_and_b64", "s_or_b64", "s_xor_b64", "s_andn2_b64",
                                    "s_orn2_b64", "s_nand_b64", "s_nor_b64", "s_xnor_b64")},
    "s_lshl_b64": (64, 32, lambda a, b, s: _bits(a << zext(b & 63, 64))),
    "s_lshr_b64": (64, 32, lambda a, b, s: _bits(LSHR(a, zext(b & 63, 64)))),
    "s_ashr_i64": (64, 32, lambda a, b, s: _bits(a >> zext(b & 63, 64))),
    "s_bfm_b64": (32, 32, lambda a, b, s: (((bv(1, 64) << zext(a & 63, 64)) - 1)
                                           << zext(b & 63, 64), None)),
    "s_bfe_u64": (64, 32, lambda a, b, s: _bits(_bfe64(a, b, False))),
    "s_bfe_i64": (64, 32, lambda a, b, s: _bits(_bfe64(a, b, True))),
    "s_cselect_b64": (64, 64, lambda a, b, s: (z3.If(s, a, b), None)),
}


def _src(m: Machine, ins, i: int, w: int = 32):
    return O.raw(m, ins.ops[i], w, False, text=ins.text)


def _dst(m: Machine, ins, w: int, val) -> None:
    d = ins.ops[0]
    if d.kind != "s":
        raise Unsupported(ins.text, f"destination {d.text} is not an SGPR")
    if w == 64:
        m.sset64(d.reg, val)
    else:
        m.sset(d.reg, val)


@register(*SOP2_32)
def _sop2_32(m: Machine, ins) -> None:
    r, scc = SOP2_32[ins.base](_src(m, ins, 1), _src(m, ins, 2), m.scc)
    _dst(m, ins, 32, z3.simplify(r))     # one normal form with the vector rows (sem_vector)
    if scc is not None:
        m.scc = scc


@register(*SOP2_64)
def _sop2_64(m: Machine, ins) -> None:
    wa, wb, fn = SOP2_64[ins.base]
    r, scc = fn(_src(m, ins, 1, wa), _src(m, ins, 2, wb), m.scc)
    _dst(m, ins, 64, z3.simplify(r))
    if scc is not None:
        m.scc = scc


def _ff1(x, w):
    out = bv(-1, 32)
    for i in range(w - 1, -1, -1):
        out = z3.If(z3.Extract(i, i, x) == 1, bv(i, 32), out)
    return out


def _flbit(x, w):
    out = bv(-1, 32)
    for i in range(w):          # the highest set bit wins: from the lowest up
        out = z3.If(z3.Extract(i, i, x) == 1, bv(w - 1 - i, 32), out)
    return out


def _quadmask(a, quads):
    return z3.Concat(*[z3.If(z3.Extract(4 * i + 3, 4 * i, a) != 0, bv(1, 1), bv(0, 1))
                       for i in reversed(range(quads))])


def _wqm(a, quads):
    return z3.Concat(*[z3.If(z3.Extract(4 * i + 3, 4 * i, a) != 0, bv(15, 4), bv(0, 4))
                       for i in reversed(range(quads))])


SOP1 = {  # name: (dst width, src width, fn(a) -> (r, scc or None))
    "s_mov_b32": (32, 32, lambda a: (a, None)),
    "s_mov_b64": (64, 64, lambda a: (a, None)),
    "s_not_b32": (32, 32, lambda a: _bits(~a)),
    "s_not_b64": (64, 64, lambda a: _bits(~a)),
    "s_brev_b32": (32, 32, lambda a: (_bfrev(a), None)),
    "s_brev_b64": (64, 64, lambda a: (_bfrev(a), None)),
    "s_bcnt0_i32_b32": (32, 32, lambda a: _bits(32 - popcount(a))),
    "s_bcnt0_i32_b64": (32, 64, lambda a: _bits(bv(64, 32) - z3.Extract(31, 0, popcount(a)))),
    "s_bcnt1_i32_b32": (32, 32, lambda a: _bits(popcount(a))),
    "s_bcnt1_i32_b64": (32, 64, lambda a: _bits(z3.Extract(31, 0, popcount(a)))),
    "s_ff0_i32_b32": (32, 32, lambda a: (_ff1(~a, 32), None)),
    "s_ff0_i32_b64": (32, 64, lambda a: (_ff1(~a, 64), None)),
    "s_ff1_i32_b32": (32, 32, lambda a: (_ff1(a, 32), None)),
    "s_ff1_i32_b64": (32, 64, lambda a: (_ff1(a, 64), None)),
    "s_flbit_i32_b32": (32, 32, lambda a: (_flbit(a, 32), None)),
    "s_flbit_i32_b64": (32, 64, lambda a: (_flbit(a, 64), None)),
    "s_flbit_i32": (32, 32, lambda a: (_flbit(z3.If(a < 0, ~a, a), 32), None)),
    "s_sext_i32_i8": (32, 32, lambda a: (sext(z3.Extract(7, 0, a), 32), None)),
    "s_sext_i32_i16": (32, 32, lambda a: (sext(z3.Extract(15, 0, a), 32), None)),
    "s_abs_i32": (32, 32, lambda a: _bits(_abs(a))),
    "s_quadmask_b32": (32, 32, lambda a: _bits(zext(_quadmask(a, 8), 32))),
    "s_quadmask_b64": (64, 64, lambda a: _bits(zext(_quadmask(a, 16), 64))),
    "s_wqm_b32": (32, 32, lambda a: _bits(_wqm(a, 8))),
    "s_wqm_b64": (64, 64, lambda a: _bits(_wqm(a, 16))),
}


@register(*SOP1)
def _sop1(m: Machine, ins) -> None:
    dw, sw, fn = SOP1[ins.base]
    r, scc = fn(_src(m, ins, 1, sw))
    _dst(m, ins, dw, z3.simplify(r))
    if scc is not None:
        m.scc = scc


@register("s_cmov_b32", "s_cmov_b64")
def _cmov(m: Machine, ins) -> None:
    w = 64 if ins.base.endswith("64") else 32
    a = _src(m, ins, 1, w)
    r = ins.ops[0].reg
    old = m.sget64(r) if w == 64 else m.sget(r)
    _dst(m, ins, w, z3.If(m.scc, a, old))


# the emulator's own functions: bitwise operators, the same on numpy words and terms
SAVEEXEC = salu.SAVEEXEC


@register(*SAVEEXEC)
def _saveexec(m: Machine, ins) -> None:
    e = m.exec64()
    new = SAVEEXEC[ins.base](_src(m, ins, 1, 64), e)
    m.sset64(EXEC, new)
    _dst(m, ins, 64, new if "wrexec" in ins.base else e)
    m.scc = new != 0


def _simm16(ins) -> int:
    imm = int(ins.raw_ops[1], 0)
    return imm - 0x10000 if imm >= 0x8000 else imm


@register("s_movk_i32", "s_cmovk_i32", "s_addk_i32", "s_mulk_i32")
def _sopk(m: Machine, ins) -> None:
    imm = bv(_simm16(ins), 32)
    r = ins.ops[0].reg
    old = m.sget(r)
    if ins.base == "s_movk_i32":
        m.sset(r, imm)
    elif ins.base == "s_cmovk_i32":
        m.sset(r, z3.If(m.scc, imm, old))
    elif ins.base == "s_addk_i32":
        res, ov = _iadd(old, imm)
        m.sset(r, res)
        m.scc = ov
    else:
        m.sset(r, old * imm)


_CMP_S = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "gt": lambda a, b: a > b,
          "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}
_CMP_U = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "gt": z3.UGT, "ge": z3.UGE,
          "lt": z3.ULT, "le": z3.ULE}


@register(*[f"s_cmp_{c}_{t}" for c in _CMP_S for t in ("i32", "u32")], "s_cmp_eq_u64",
          "s_cmp_lg_u64")
def _scmp(m: Machine, ins) -> None:
    _, _, cc, t = ins.base.split("_")
    w = 64 if t == "u64" else 32
    m.scc = (_CMP_S if t == "i32" else _CMP_U)[cc](_src(m, ins, 0, w), _src(m, ins, 1, w))


@register(*[f"s_cmpk_{c}_{t}" for c in _CMP_S for t in ("i32", "u32")])
def _scmpk(m: Machine, ins) -> None:
    _, _, cc, t = ins.base.split("_")
    imm = int(ins.raw_ops[1], 0) & 0xFFFF
    if t == "i32":
        m.scc = _CMP_S[cc](_src(m, ins, 0), bv(imm - 0x10000 if imm >= 0x8000 else imm, 32))
    else:
        m.scc = _CMP_U[cc](_src(m, ins, 0), bv(imm, 32))


@register("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64")
def _bitcmp(m: Machine, ins) -> None:
    w = 64 if ins.base.endswith("64") else 32
    a, b = _src(m, ins, 0, w), zext(_src(m, ins, 1), w)
    m.scc = LSHR(a, b & (w - 1)) & 1 == (1 if "bitcmp1" in ins.base else 0)


@register("s_bitset0_b32", "s_bitset1_b32", "s_bitset0_b64", "s_bitset1_b64")
def _bitset(m: Machine, ins) -> None:
    w = 64 if ins.base.endswith("64") else 32
    r = ins.ops[0].reg
    old = m.sget64(r) if w == 64 else m.sget(r)
    bit = bv(1, w) << (zext(_src(m, ins, 1), w) & (w - 1))
    _dst(m, ins, w, old | bit if "bitset1" in ins.base else old & ~bit)


@register("s_nop", "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt",
          "s_waitcnt_expcnt", "s_sleep", "s_setprio")
def _noop(m: Machine, ins) -> None:
    return None


@register("s_barrier")
def _barrier(m: Machine, ins) -> None:
    m.barrier()


@register("s_getreg_b32")
def _getreg(m: Machine, ins) -> None:
    t = ins.raw_ops[1].strip()
    if not t.startswith("hwreg(") or not t.endswith(")"):
        raise Unsupported(ins.text, "hwreg operand")
    parts = [p.strip() for p in t[6:-1].split(",")]
    reg = salu.HWREG_IDS.get(parts[0]) if not parts[0].isdigit() else int(parts[0])
    if reg != salu.HWREG_IDS["HW_REG_MODE"]:
        raise Unsupported(ins.text, "hardware registers other than MODE")
    off = int(parts[1], 0) if len(parts) > 1 else 0
    size = int(parts[2], 0) if len(parts) > 2 else 32
    val = (m.ctx.mode >> off) & ((1 << size) - 1 if size < 32 else 0xFFFFFFFF)
    m.sset(ins.ops[0].reg, bv(val, 32))


_N = {"dword": 1, "dwordx2": 2, "dwordx4": 4, "dwordx8": 8, "dwordx16": 16}


@register(*[f"s_load_{k}" for k in _N])
def _sload(m: Machine, ins) -> None:
    n = _N[ins.base.rsplit("_", 1)[1]]
    dst, base = ins.ops[0].reg, ins.ops[1].reg
    extra = int(ins.mods.get("offset", 0))
    off = bv(extra, 64)
    if len(ins.ops) >= 3:
        off = zext(O.raw(m, ins.ops[2], 32, False, text=ins.text), 64) + off
    addr = m.address("global", z3.simplify(m.sget64(base) + (off & bv(0xFFFFFFFC, 64))))
    m.dword_faults(addr, 4 * n, False, z3.BoolVal(True))
    idx = dword_index(addr)
    vals = m.kernarg_values(base, z3.simplify(off & bv(0xFFFFFFFC, 64)).as_long(), n) \
        if z3.is_bv_value(z3.simplify(off)) else None
    if vals is None:
        vals = [z3.Select(m.mem, idx + bv(i, 62) if i else idx) for i in range(n)]
    for i, v in enumerate(vals):
        m.sset(dst + i, v)
