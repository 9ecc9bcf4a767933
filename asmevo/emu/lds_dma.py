"""Buffer loads straight into LDS: ``buffer_load_dword VADDR, SRSRC, SOFFSET [offen|idxen]
[offset:N] lds`` (CDNA3 ISA 9.1.9, "Buffer loads to LDS").

The memory side is an ordinary buffer load (same address, same V# range
check: out-of-range lanes return 0); nothing is written to VGPRs. Each active
lane's dword goes to LDS at ``M0[15:0] + inst_offset + 4 * lane`` within the
workgroup's allocation (the guide: LDS_offset = M0[15:0]; the instruction
offset moves both addresses, which is how AITer's kernels step M0 by 0x100
per 64-lane dword load and use offset:256/512 with an unchanged M0). An LDS
address outside the allocation is a fault (hardware clamps it; a kernel that
relies on that is refused rather than silently truncated). The guide lists
load-to-LDS for ubyte/sbyte/ushort/sshort/dword/format_x; only the dword form
(the one gfx942 code uses) is modelled, the others are refused.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from asmevo.emu.decode import Decoded, Insn, op
from asmevo.emu.operands import Operand
from asmevo.emu.state import M0

U32, U64, I64 = np.uint32, np.uint64, np.int64
_LANES = np.arange(64, dtype=I64)


def buffer_lds_addr(ins: Insn):
    """The memory-side address closure of an LDS-form buffer load (see vmem._buffer_addr)."""
    from asmevo.emu import vmem
    if len(ins.ops) != 3:
        raise ins.fail("expected VADDR, SRSRC, SOFFSET")
    # the address helpers expect a VDATA slot first; the LDS form has none
    return vmem._buffer_addr(replace(ins, ops=[Operand("off", "off")] + list(ins.ops)), 4, 1)


def buffer_load_lds(ins: Insn) -> Decoded:
    """The executor of a ``buffer_load_* ... lds`` instruction."""
    from asmevo.emu import vmem
    if ins.base != "buffer_load_dword":
        raise ins.fail("loads into LDS other than buffer_load_dword")
    addr = buffer_lds_addr(ins)
    inst = int(ins.mods.get("offset", 0))

    def run(c):
        if c.lanes == 0:
            return
        a, offset, stride, index, nrec = addr(c)
        ok = vmem._active_flat(c, vmem._in_range(offset, stride, index, nrec, 4))
        af = vmem._active_flat(c, a)
        vals = np.zeros(af.shape, U32)
        if ok.any():
            vals[ok] = vmem._load_values(c, af[ok], 4, 1)[0]
        base = (c.sr(M0).astype(I64) & 0xFFFF) + inst
        local = vmem._active_flat(c, base[:, None] + 4 * _LANES[None, :])
        offs = vmem._lds_offs_active(c, local, 4)
        c.st.lds.view(U32)[offs >> 2] = vals
    return op(run)

