"""Scalar atomics: ``s_atomic_<op>[_x2] SDATA, SBASE, SOFFSET [offset:N] [glc]``.

The CDNA3 ISA guide (8.1.2): scalar atomics support the vector-memory atomic
operations with the scalar address calculation (SBASE + SOFFSET + OFFSET, the
low two bits ignored) and return the pre-op value into SDATA when GLC is set.
One address per wave; the waves of a group apply theirs in wave order (waves
racing on one address is the program's race, as on hardware). The arithmetic
is the vector atomics' (:data:`asmevo.emu.isa.vmem.ATOMIC32` / ``ATOMIC64``); cmpswap
takes {src, cmp} from SDATA.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.smem import _offset
from asmevo.emu.isa.vmem import ATOMIC32, ATOMIC64

U32, U64 = np.uint32, np.uint64
_OPS32 = ("add", "sub", "swap", "smin", "umin", "smax", "umax", "and", "or", "xor", "inc", "dec")


def _sdata_width(name: str) -> tuple[int, int]:
    """(dwords of the memory operand, dwords of SDATA)."""
    wide = name.endswith("_x2")
    n = 2 if wide else 1
    return n, 2 * n if name.startswith("cmpswap") else n


@register(*[f"s_atomic_{k}" for k in _OPS32], *[f"s_atomic_{k}_x2" for k in _OPS32],
          "s_atomic_cmpswap", "s_atomic_cmpswap_x2")
def _s_atomic(ins: Insn) -> Decoded:
    name = ins.base[len("s_atomic_"):]
    nmem, ndata = _sdata_width(name)
    sdata, sbase = ins.ops[0], ins.ops[1]
    if sdata.kind != "s" or sdata.count != ndata or sbase.kind != "s" or sbase.count != 2:
        raise ins.fail("expected SDATA and an SGPR-pair SBASE")
    ret = bool(ins.mods.get("glc") or ins.mods.get("sc0"))
    off = _offset(ins)
    cmpswap = name.startswith("cmpswap")
    fn = None if cmpswap else (ATOMIC64[name] if nmem == 2 else ATOMIC32[name])
    d, b = sdata.reg, sbase.reg

    def run(c):
        addrs = np.broadcast_to(c.sr64(b) + (off(c) & U64(0xFFFFFFFC)), (c.w,))
        mem = c.launch.mem
        offs = mem.check(np.ascontiguousarray(addrs), 4 * nmem, True, (c.kernel, c.address))
        s = c.st.s
        for i, w in enumerate(np.asarray(c.waves)):
            o = offs[i:i + 1]
            old = [mem.load(o + 4 * k, 4)[0] for k in range(nmem)]
            data = [s[d + k, w] for k in range(ndata)]
            if nmem == 2:
                oldv = U64(old[0]) | (U64(old[1]) << U64(32))
                src = U64(data[0]) | (U64(data[1]) << U64(32))
                cmpv = (U64(data[2]) | (U64(data[3]) << U64(32))) if cmpswap else None
            else:
                oldv, src = U32(old[0]), U32(data[0])
                cmpv = U32(data[1]) if cmpswap else None
            if cmpswap:
                new = src if oldv == cmpv else oldv
            else:
                new = fn(np.array([oldv]), np.array([src]))[0]
            for k in range(nmem):
                part = (int(new) >> (32 * k)) & 0xFFFFFFFF
                mem.store(o + 4 * k, 4, np.array([part], U32))
            if ret:
                for k in range(nmem):
                    s[d + k, w] = old[k]
    return op(run)
