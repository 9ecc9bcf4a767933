"""Lane access: v_readlane_b32, v_writelane_b32, v_readfirstlane_b32.

(DPP lane permutations are source modifiers, in :mod:`asmevo.emu.isa.vsrc`;
ds_bpermute/ds_swizzle are in :mod:`asmevo.emu.isa.lds`.)
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader

U32 = np.uint32


@register("v_readlane_b32")
def _readlane(ins: Insn) -> Decoded:
    sdst, vsrc = ins.ops[0].reg, ins.ops[1].reg
    lane = raw_reader(ins.ops[2], 32, vector=False)

    def run(c):
        ln = (np.broadcast_to(lane(c), (c.w,)) & U32(63)).astype(np.int64)
        vals = c.vr(vsrc)[np.arange(c.w), ln]
        c.sw(sdst, vals)
    return op(run)


@register("v_readfirstlane_b32")
def _readfirstlane(ins: Insn) -> Decoded:
    sdst = ins.ops[0].reg
    src = ins.ops[1]
    if src.kind != "v":
        rd = raw_reader(src, 32, vector=False)
        return op(lambda c: c.sw(sdst, np.broadcast_to(rd(c), (c.w,))))
    vsrc = src.reg

    def run(c):
        m = c.exec_mask()
        first = np.where(m.any(axis=1), np.argmax(m, axis=1), 0)
        c.sw(sdst, c.vr(vsrc)[np.arange(c.w), first])
    return op(run)


@register("v_writelane_b32")
def _writelane(ins: Insn) -> Decoded:
    vdst = ins.ops[0].reg
    val = raw_reader(ins.ops[1], 32, vector=False)
    lane = raw_reader(ins.ops[2], 32, vector=False)

    def run(c):
        ln = (np.broadcast_to(lane(c), (c.w,)) & U32(63)).astype(np.int64)
        v = c.vr(vdst).copy()
        v[np.arange(c.w), ln] = np.broadcast_to(val(c), (c.w,))
        idx = c.idx
        c.st.v[vdst, idx] = v      # writelane ignores EXEC
    return op(run)
