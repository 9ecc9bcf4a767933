"""Scalar memory: s_load_dword*, s_buffer_load_dword*, s_store_dword*, s_memtime.

One address per wave; the same checked global memory as vector accesses, so a
kernel that reads its kernarg segment, the dispatch packet or a buffer through
SMEM goes through the same bounds checks.
"""
from __future__ import annotations


import numpy as np

from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader
from asmevo.emu.machine.state import EXEC

U32, U64 = np.uint32, np.uint64
_N = {"dword": 1, "dwordx2": 2, "dwordx4": 4, "dwordx8": 8, "dwordx16": 16}


def _offset(ins: Insn):
    extra = int(ins.mods.get("offset", 0))
    if len(ins.ops) < 3:
        return lambda c: U64(extra)
    rd = raw_reader(ins.ops[2], 32, vector=False)
    return lambda c: rd(c).astype(U64) + U64(extra)


@register(*[f"s_load_{k}" for k in _N], *[f"s_buffer_load_{k}" for k in _N])
def _sload(ins: Insn) -> Decoded:
    n = _N[ins.base.rsplit("_", 1)[1]]
    buffer = ins.base.startswith("s_buffer")
    dst, base = ins.ops[0].reg, ins.ops[1].reg
    off = _offset(ins)

    def run(c):
        s = c.st.s
        b = s[base, c.idx].astype(U64) | ((s[base + 1, c.idx].astype(U64)
                                           & U64(0xFFFF if buffer else 0xFFFFFFFF)) << U64(32))
        o = off(c) & U64(0xFFFFFFFC)
        addr = np.broadcast_to(b + o, (c.w,))
        ok = np.ones(c.w, bool)
        if buffer:
            nrec = s[base + 2, c.idx].astype(U64)
            ok = o + U64(4 * n) <= nrec
        mem = c.launch.mem
        if ok.all():    # every wave loads (always, but for a buffer's range check)
            offs = mem.check(addr, 4 * n, False, (c.kernel, c.address))
            vals = mem.load_dwords(offs, n)
            if dst + n <= EXEC:     # c.sw of each is a plain row write below EXEC
                c.st.s[dst:dst + n, c.idx] = vals
                return
        else:
            vals = np.zeros((n, c.w), U32)
            if ok.any():
                offs = mem.check(addr[ok], 4 * n, False, (c.kernel, c.address))
                for i in range(n):
                    vals[i, ok] = mem.load(offs + 4 * i, 4)
        for i in range(n):
            c.sw(dst + i, vals[i])
    return op(run)


@register(*[f"s_store_{k}" for k in ("dword", "dwordx2", "dwordx4")])
def _sstore(ins: Insn) -> Decoded:
    n = _N[ins.base.rsplit("_", 1)[1]]
    src, base = ins.ops[0].reg, ins.ops[1].reg
    off = _offset(ins)

    def run(c):
        addr = c.sr64(base) + (off(c) & U64(0xFFFFFFFC))
        mem = c.launch.mem
        offs = mem.check(np.broadcast_to(addr, (c.w,)), 4 * n, True, (c.kernel, c.address))
        for i in range(n):
            mem.store(offs + 4 * i, 4, c.sr(src + i))
    return op(run)


@register("s_memtime", "s_memrealtime")
def _memtime(ins: Insn) -> Decoded:
    dst = ins.ops[0].reg

    def run(c):
        c.launch.clock += 1000          # deterministic, increasing
        c.sw64(dst, np.full(c.w, c.launch.clock, U64))
    return op(run)
