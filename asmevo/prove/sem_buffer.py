"""Buffer loads and stores (MUBUF), as the emulator does them: :mod:`asmevo.emu.isa.vmem`'s
"buffer" section on a linear resource, :mod:`asmevo.emu.isa.scratch`'s on a swizzled one.

The V# is SRSRC's four SGPRs: the base (48 bits), the stride (bits 29:16 of the second
dword), ``num_records`` (the third dword). A resource is *swizzled* (the private segment
buffer's layout) where SWIZZLE_ENABLE (bit 31 of the second dword) or ADD_TID_ENABLE (bit
23 of the fourth) is set; which one a wave's access takes is a term, so both are modeled.

Linear (vmem._buffer_addr): a lane's address is ``base + SOFFSET + offset + stride *
index`` in 64 bits (``offset``: VADDR's offset register if offen, plus the instruction's
offset; ``index``: VADDR's first register if idxen), and each dword ``i`` of the access is
range-checked per lane (vmem._in_range: with idxen and a stride, the index against
``num_records``; else the end of the dword, ``offset + 4i + size``, in bytes). A lane out
of range reads 0 and writes nothing, and its address is not checked. Where the byte check
and a nonzero SOFFSET disagree on whether SOFFSET takes part (vmem._soffset_range_check),
the emulator refuses the state: like a signalling NaN in a float row, a condition the two
versions must share, kept with the faults.

Swizzled (scratch.swizzled_address): the element size and index stride from the fourth
dword, the lane id added to the index under ADD_TID_ENABLE, the offset a 32-bit sum, and
no range check. Where the launch has a private segment, an access that leaves the lane's
column of its wave's slot faults (:meth:`Context.private_fault`; the harness has none).

Every dword then goes through the global path's fault model and memory
(:meth:`Machine.dword_faults`, :func:`~asmevo.prove.sem_memory.load_into`,
:func:`~asmevo.prove.sem_memory.store_lanes`: dword after dword, lanes in order). Loads
into LDS (``... lds``), atomics and the format forms are refused.
"""
from __future__ import annotations

from asmevo.emu.isa.vmem import LOADS, STORES
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import Machine
from asmevo.prove.rows import register
from asmevo.prove.sem_memory import load_into, store_data, store_lanes
from asmevo.prove.term import LANE, bv, zext
from asmevo.prove.z3env import z3

_MODS = {"offen", "idxen", "offset", "glc", "slc", "sc0", "sc1", "nt"}


def _bit(x, k: int):
    return z3.Extract(k, k, x) == 1


class Access:
    """One buffer access's terms (lane terms, 64 bits): ``offset`` (VADDR's offset register
    if offen, plus the instruction's), ``index`` (VADDR's first register if idxen),
    ``nrec`` (num_records), ``swizzled`` (a Bool: the resource's layout)."""

    def __init__(self, m: Machine, ins, vaddr_i: int):
        bad = set(ins.mods) - _MODS
        if bad:
            raise Unsupported(ins.text, f"buffer modifiers {sorted(bad)}")
        ops = ins.ops
        self.m, self.ins = m, ins
        self.offen, self.idxen = bool(ins.mods.get("offen")), bool(ins.mods.get("idxen"))
        va, rsrc = ops[vaddr_i], ops[vaddr_i + 1]
        if rsrc.kind != "s" or (self.offen or self.idxen) and va.kind != "v":
            raise Unsupported(ins.text, "buffer operands")
        r = rsrc.reg
        d1, self.d3 = m.sget(r + 1), m.sget(r + 3)
        self.nrec = zext(m.sget(r + 2), 64)
        self.base = zext(z3.Concat(z3.Extract(15, 0, d1), m.sget(r)), 64)
        self.stride = zext(z3.Extract(29, 16, d1), 64)
        self.swizzled = z3.simplify(z3.Or(_bit(d1, 31), _bit(self.d3, 23)))
        zero = bv(0, 64)
        self.inst = int(ins.mods.get("offset", 0))
        self.vindex = zext(m.vuse(va.reg), 64) if self.idxen else zero
        self.voff = zext(m.vuse(va.reg + 1 if self.idxen else va.reg), 64) \
            if self.offen else zero
        self.offset = self.voff + bv(self.inst, 64)
        so = ops[vaddr_i + 2] if len(ops) > vaddr_i + 2 else None
        self.soffset = zext(O.raw(m, so, 32, True, text=ins.text), 64) if so else zero

    def linear(self, i: int):
        """The linear address of dword ``i`` (vmem._buffer_addr, plus 4i)."""
        a = self.base + self.soffset + self.offset
        if self.idxen:
            a = a + self.stride * self.vindex
        return a + bv(4 * i, 64) if i else a

    def swizzle(self, i: int):
        """The swizzled address of dword ``i`` (scratch.swizzled_address)."""
        e_log = zext(z3.Extract(20, 19, self.d3), 64) + 1         # element size 2 << k
        s_log = zext(z3.Extract(22, 21, self.d3), 64) + 3         # index stride 8 << k
        index = self.vindex + z3.If(_bit(self.d3, 23), zext(LANE, 64), bv(0, 64))
        offset = bv(self.inst + 4 * i, 64)
        if self.offen:
            offset = zext(z3.Extract(31, 0, offset + self.voff), 64)
        emask = (bv(1, 64) << e_log) - 1
        smask = (bv(1, 64) << s_log) - 1
        off = ((z3.LShR(index, s_log) * self.stride + (offset & ~emask)) << s_log) \
            + ((index & smask) << e_log) + (offset & emask)
        return self.base + self.soffset + off

    def address(self, i: int):
        """Dword ``i``'s address as the resource's layout has it."""
        lin = z3.simplify(self.linear(i))
        if z3.is_false(self.swizzled):
            return self.m.address("global", lin)
        return self.m.address("global", z3.simplify(
            z3.If(self.swizzled, self.swizzle(i), lin)))

    def in_range(self, i: int, size: int):
        """Whether the lane accesses dword ``i`` (``size`` bytes): a swizzled resource has
        no range check; a linear one vmem._in_range's (by bytes where the stride is 0 or
        idxen is off)."""
        end = z3.ULE(self.offset + bv(4 * i + size, 64), self.nrec)
        if self.idxen:
            end = z3.If(self.stride == 0, end, z3.ULT(self.vindex, self.nrec))
        return z3.Or(self.swizzled, end)

    def faults(self, size: int, ndw: int, write: bool) -> list:
        """Every dword's address, with its faults added: the refused SOFFSET range check,
        then each dword's access where the lane makes it (the private column too)."""
        m = self.m
        so = z3.simplify(self.soffset)
        if not self.idxen and not (z3.is_bv_value(so) and so.as_long() == 0):
            differ = []
            for i in range(ndw):
                end = self.offset + bv(size * (i + 1), 64)
                differ.append(z3.Xor(z3.ULE(end, self.nrec), z3.ULE(end + so, self.nrec)))
            m.fault(z3.And(m.active(), z3.Not(self.swizzled), z3.Or(*differ)))
        addrs = []
        for i in range(ndw):
            a = self.address(i)
            m.dword_faults(a, size, write, z3.And(m.active(), self.in_range(i, size)))
            if not z3.is_false(self.swizzled):
                m.fault(z3.And(m.active(), self.swizzled,
                               m.ctx.private_fault(a, LANE, size)))
            addrs.append(a)
        return addrs


def _access(m: Machine, ins) -> Access:
    if "lds" in ins.mods:
        raise Unsupported(ins.text, "buffer loads into LDS")
    return Access(m, ins, 1)


@register(*[f"buffer_load_{k}" for k in LOADS])
def _bload(m: Machine, ins) -> None:
    size, ndw, kind = LOADS[ins.base.split("_load_")[1]]
    acc = _access(m, ins)
    addrs = acc.faults(size, ndw, False)
    ok = [acc.in_range(i, size) for i in range(ndw)]
    load_into(m, m.mem, ins.ops[0].reg, addrs, size, ndw, kind, ok)


@register(*[f"buffer_store_{k}" for k in STORES])
def _bstore(m: Machine, ins) -> None:
    size, ndw, kind = STORES[ins.base.split("_store_")[1]]
    acc = _access(m, ins)
    vals = store_data(m, ins.ops[0].reg, ndw, size, kind)
    addrs = acc.faults(size, ndw, True)
    for i in range(ndw):
        on = z3.And(m.active(), acc.in_range(i, size))
        m.mem = store_lanes(m, m.mem, addrs[i], [vals[i]], size, on)
