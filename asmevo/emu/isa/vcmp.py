"""Vector compares (VOPC and their VOP3/SDWA forms): v_cmp_*, v_cmpx_*, v_cmp_class_*.

A compare writes one bit per lane to VCC or an SGPR pair (0 for inactive
lanes); the ``cmpx`` forms also write EXEC, which is how divergent ``if``s
start.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.numerics import fpmode
from asmevo.emu.numerics import exact as nx
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.machine.state import EXEC
from asmevo.emu.isa.vsrc import source

U32 = np.uint32

FLOAT_CMP = {
    "f": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
    "lt": np.less, "eq": np.equal, "le": np.less_equal, "gt": np.greater,
    "lg": lambda a, b: (a < b) | (a > b), "ge": np.greater_equal,
    "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)), "u": lambda a, b: np.isnan(a) | np.isnan(b),
    "nge": lambda a, b: ~(a >= b), "nlg": lambda a, b: ~((a < b) | (a > b)),
    "ngt": lambda a, b: ~(a > b), "nle": lambda a, b: ~(a <= b), "neq": lambda a, b: ~(a == b),
    "nlt": lambda a, b: ~(a < b), "tru": lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
}
INT_CMP = {
    "f": FLOAT_CMP["f"], "lt": np.less, "eq": np.equal, "le": np.less_equal,
    "gt": np.greater, "ne": np.not_equal, "lg": np.not_equal, "ge": np.greater_equal,
    "t": FLOAT_CMP["tru"],
}
TYPES = ("f16", "f32", "f64", "i16", "i32", "i64", "u16", "u32", "u64")


def _names():
    out = []
    for t in TYPES:
        table = FLOAT_CMP if t[0] == "f" else INT_CMP
        for cc in table:
            out += [f"v_cmp_{cc}_{t}", f"v_cmpx_{cc}_{t}"]
    for t in ("f16", "f32", "f64"):
        out += [f"v_cmp_class_{t}", f"v_cmpx_class_{t}"]
    return out


def _class(x, mask):
    m = np.asarray(mask, dtype=np.int64)
    info = np.finfo(x.dtype)
    ax = np.abs(x)
    neg = np.signbit(x)
    bits = x.view({2: np.uint16, 4: U32, 8: np.uint64}[x.dtype.itemsize])
    quiet_bit = {2: 1 << 9, 4: 1 << 22, 8: 1 << 51}[x.dtype.itemsize]
    nan = np.isnan(x)
    qnan = nan & ((bits & bits.dtype.type(quiet_bit)) != 0)
    snan = nan & ~qnan
    inf = np.isinf(x)
    zero = x == 0
    den = (ax < info.tiny) & ~zero
    norm = ~nan & ~inf & ~zero & ~den
    classes = [snan, qnan, inf & neg, norm & neg, den & neg, zero & neg, zero & ~neg,
               den & ~neg, norm & ~neg, inf & ~neg]
    out = np.zeros(np.broadcast(x, m).shape, bool)
    for i, cl in enumerate(classes):
        out |= cl & (((m >> i) & 1) == 1)
    return out


@register(*_names())
def _vcmp(ins: Insn) -> Decoded:
    parts = ins.base.split("_")
    cmpx = parts[1] == "cmpx"
    cc, t = parts[2], parts[3]
    dst = ins.ops[0]
    if dst.kind != "s":
        raise ins.fail(f"compare destination {dst.text}")
    sdst = dst.reg
    if cc == "class":
        ra = source(ins, ins.ops[1], t, 0)
        rb = source(ins, ins.ops[2], "u32", 1)
        fn = _class
    else:
        ra = source(ins, ins.ops[1], t, 0)
        rb = source(ins, ins.ops[2], t, 1)
        fn = (FLOAT_CMP if t[0] == "f" else INT_CMP)[cc]

    width = int(t[1:])
    flush = t[0] == "f" and cc != "class"
    ftz = {16: nx.ftz16, 32: nx.ftz32, 64: nx.ftz64}.get(width)

    def run(c):
        a, b = ra(c), rb(c)
        if flush and fpmode.flush_bits(fpmode.mode_of(c, ins.mnemonic), width)[0]:
            a, b = ftz(a), ftz(b)          # denormal inputs compare as zero when flushed
        with np.errstate(invalid="ignore"):
            res = fn(a, b)
        res = np.broadcast_to(res, (c.w, 64))
        if cmpx:
            res = res & c.exec_mask()
            if sdst != EXEC:
                c.lane_mask_write(sdst, res)
            c.lane_mask_write(EXEC, res)
        else:
            c.lane_mask_write(sdst, res)
    return op(run)
