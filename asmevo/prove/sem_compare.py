"""Vector compares (asmevo.emu.isa.vcmp): v_cmp_*, v_cmpx_*, v_cmp_class_*.

A compare writes bit ``lane`` of an SGPR pair (VCC) for every lane, 0 where EXEC is
off; ``cmpx`` also writes EXEC. Float compares see denormals as zero where MODE
flushes float sources (not ``class``, which reads the bits).
"""
from __future__ import annotations

from asmevo.emu.numerics.fpmode import flush_bits
from asmevo.emu.isa.vcmp import _names
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import EXEC, Machine
from asmevo.prove.rows import register
from asmevo.prove.sem_vector import lane_mask_write
from asmevo.prove.term import fields, ftz, is_denormal, is_nan, is_snan, sign_of, to_fp
from asmevo.prove.z3env import z3

FLOAT_CMP = {
    "f": lambda a, b: z3.BoolVal(False), "lt": z3.fpLT, "eq": z3.fpEQ, "le": z3.fpLEQ,
    "gt": z3.fpGT, "lg": lambda a, b: z3.Or(z3.fpLT(a, b), z3.fpGT(a, b)), "ge": z3.fpGEQ,
    "o": lambda a, b: z3.Not(z3.Or(z3.fpIsNaN(a), z3.fpIsNaN(b))),
    "u": lambda a, b: z3.Or(z3.fpIsNaN(a), z3.fpIsNaN(b)),
    "nge": lambda a, b: z3.Not(z3.fpGEQ(a, b)),
    "nlg": lambda a, b: z3.Not(z3.Or(z3.fpLT(a, b), z3.fpGT(a, b))),
    "ngt": lambda a, b: z3.Not(z3.fpGT(a, b)), "nle": lambda a, b: z3.Not(z3.fpLEQ(a, b)),
    "neq": lambda a, b: z3.Not(z3.fpEQ(a, b)), "nlt": lambda a, b: z3.Not(z3.fpLT(a, b)),
    "tru": lambda a, b: z3.BoolVal(True),
}
_SIGNED = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
           "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
_UNSIGNED = {"lt": z3.ULT, "le": z3.ULE, "gt": z3.UGT, "ge": z3.UGE}


def _int_cmp(cc: str, signed: bool):
    if cc == "f":
        return lambda a, b: z3.BoolVal(False)
    if cc == "t":
        return lambda a, b: z3.BoolVal(True)
    if cc == "eq":
        return lambda a, b: a == b
    if cc in ("ne", "lg"):
        return lambda a, b: a != b
    return (_SIGNED if signed else _UNSIGNED)[cc]


def float_class(x, mask):
    """v_cmp_class: whether ``x``'s class is one of ``mask``'s bits (vcmp._class)."""
    sign, e, m = fields(x)
    nan, snan = is_nan(x), is_snan(x)
    inf = z3.And(e == -1, m == 0)
    zero = z3.And(e == 0, m == 0)
    den = is_denormal(x)
    norm = z3.Not(z3.Or(nan, inf, zero, den))
    neg = sign_of(x)
    pos = z3.Not(neg)
    classes = [snan, z3.And(nan, z3.Not(snan)), z3.And(inf, neg), z3.And(norm, neg),
               z3.And(den, neg), z3.And(zero, neg), z3.And(zero, pos), z3.And(den, pos),
               z3.And(norm, pos), z3.And(inf, pos)]
    return z3.Or(*[z3.And(c, z3.Extract(i, i, mask) == 1) for i, c in enumerate(classes)])


@register(*_names())
def _vcmp(m: Machine, ins) -> None:
    parts = ins.base.split("_")
    cmpx, cc, t = parts[1] == "cmpx", parts[2], parts[3]
    dst = ins.ops[0]
    if dst.kind != "s":
        raise Unsupported(ins.text, f"compare destination {dst.text}")
    if ins.encoding == "dpp":
        raise Unsupported(ins.text, "DPP compare")
    a, _ = O.source(m, ins, ins.ops[1], t, 0)
    if cc == "class":
        b, _ = O.source(m, ins, ins.ops[2], "u32", 1)
        res = float_class(a, b)
    else:
        b, _ = O.source(m, ins, ins.ops[2], t, 1)
        if t[0] == "f":
            if flush_bits(m.ctx.mode, int(t[1:]))[0]:
                a, b = ftz(a), ftz(b)
            res = FLOAT_CMP[cc](to_fp(a), to_fp(b))
        else:
            res = _int_cmp(cc, t[0] == "i")(a, b)
    if cmpx:
        res = z3.And(res, m.active())
        if dst.reg != EXEC:
            lane_mask_write(m, dst.reg, res)
        lane_mask_write(m, EXEC, res)
    else:
        lane_mask_write(m, dst.reg, res)
