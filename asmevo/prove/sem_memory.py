"""Vector memory: global loads and stores, LDS reads and writes, DS lane permutes.

As :mod:`asmevo.emu.isa.vmem` and :mod:`asmevo.emu.isa.lds` do it: every active lane's
address is checked (a fault condition per lane, :meth:`Machine.dword_faults`), a
load gives lane ``LANE`` the dwords at its address in the memory as it is at that
instruction, and a store writes every active lane's data, dword by dword and lane
by lane in order (so where two lanes write one address, the later lane's value
stays, as numpy's scatter leaves it). Sub-dword accesses read and rewrite their
dword. Buffer accesses are :mod:`asmevo.prove.sem_buffer`'s (these helpers, a range
check per lane and dword); flat accesses, atomics and loads into LDS are refused.
"""
from __future__ import annotations

from asmevo.emu.isa.lds import READS, WRITES, _swizzle_pattern
from asmevo.emu.isa.vmem import LOADS, STORES
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import BV62, Machine, dword_index, low_bits
from asmevo.prove.rows import register
from asmevo.prove.term import at_lane, bv, each_lane, lane_table, sext, zext
from asmevo.prove.z3env import z3


def global_addr(m: Machine, ins, vaddr_i: int, saddr_i: int):
    """A lane's 64-bit address (vmem._global_addr), simplified (see :func:`lds_addr`)."""
    off = bv(int(ins.mods.get("offset", 0)), 64)
    va = ins.ops[vaddr_i]
    sa = ins.ops[saddr_i] if saddr_i < len(ins.ops) else None
    if sa is not None and sa.kind == "s":
        return m.address("global", z3.simplify(
            m.sget64(sa.reg) + zext(O.raw(m, va, 32, True, text=ins.text), 64) + off))
    if sa is not None and sa.kind != "off":
        raise Unsupported(ins.text, f"address operand {sa.text}")
    return m.address("global", z3.simplify(O.raw(m, va, 64, True, text=ins.text) + off))


def read_bytes(arr, addr, size: int):
    """``size`` (1 or 2) bytes at byte address ``addr`` of a dword array, zero-extended
    to 32 bits."""
    word = z3.Select(arr, dword_index(addr))
    shift = zext(z3.Extract(1, 0, addr), 32) * 8
    return z3.LShR(word, shift) & bv((1 << (8 * size)) - 1, 32)


def write_bytes(arr, addr, size: int, val):
    """``arr`` with ``size`` bytes (1, 2 or 4) of ``val`` (32 bits) at ``addr``."""
    idx = dword_index(addr)
    if size == 4:
        return z3.Store(arr, idx, val)
    word = z3.Select(arr, idx)
    shift = zext(z3.Extract(1, 0, addr), 32) * 8
    mask = bv((1 << (8 * size)) - 1, 32) << shift
    return z3.Store(arr, idx, (word & ~mask) | ((val << shift) & mask))


def _extend(v32, size: int, kind: str, old):
    """A sub-dword load's value as written to its destination (vmem._write_loaded)."""
    if kind == "u":
        return v32
    if kind == "s":
        return sext(z3.Extract(8 * size - 1, 0, v32), 32)
    if kind in ("slo", "shi"):
        v32 = zext(sext(z3.Extract(7, 0, v32), 16), 32)
    if kind in ("lo", "slo"):
        return (old & bv(0xFFFF0000, 32)) | v32
    return (old & bv(0xFFFF, 32)) | (v32 << 16)


def load_into(m: Machine, arr, dst: int, addr, size: int, ndw: int, kind: str,
              ok: list | None = None) -> None:
    """Write the loaded value(s) of lane LANE into ``dst``.. (active lanes). ``addr``: the
    first dword's address (the next ones follow it), or a list, one per dword. ``ok``: per
    dword, whether the lane reads it (a buffer's range check); where not, it reads 0."""
    for i in range(ndw):
        a = addr[i] if isinstance(addr, list) else \
            addr + bv(4 * i, addr.size()) if i else addr
        got = z3.Select(arr, dword_index(a)) if size == 4 else read_bytes(arr, a, size)
        if ok is not None:
            got = z3.If(ok[i], got, bv(0, 32))
        m.vwrite(dst + i, got if size == 4 else _extend(got, size, kind, m.vuse(dst)))


def store_lanes(m: Machine, arr, addr, vals: list, size: int, on=None):
    """``arr`` after every active lane (``on``: every lane where that Bool holds, else
    EXEC's) stores ``vals`` (one 32-bit term per dword, in LANE) at ``addr``: dword by
    dword, lanes in order (the last lane writing a dword wins). A placeholder array
    (:meth:`Context.defer`): the 64 lanes are spelled out only where a question needs
    them."""
    on = m.active() if on is None else on
    key = (arr, addr, on, *vals, bv(size, 8))
    return m.ctx.defer("store", key, arr.sort(),
                       lambda: _stored(arr, addr, on, vals, size))


def _stored(arr, addr, on_lane, vals: list, size: int):
    """The array :func:`store_lanes` names: at dword ``x`` the value of the highest
    active lane that writes ``x``, else the old value; narrower stores merge into the
    dword lane after lane."""
    on = each_lane(on_lane)
    addrs = each_lane(addr)
    x = z3.Const("x", BV62)
    for i, v in enumerate(vals):
        vs = each_lane(v)
        idx = [dword_index(a + bv(4 * i, a.size()) if i else a) for a in addrs]
        if size == 4:
            body = z3.Select(arr, x)
            for lane in range(64):
                if not z3.is_false(on[lane]):
                    body = z3.If(z3.And(on[lane], idx[lane] == x), vs[lane], body)
            arr = z3.Lambda([x], body)
            continue
        for lane in range(64):
            if z3.is_false(on[lane]):
                continue
            old = z3.Select(arr, x)
            new = merge_bytes(old, addrs[lane], size, vs[lane])
            arr = z3.Lambda([x], z3.If(z3.And(on[lane], idx[lane] == x), new, old))
    return arr


def merge_bytes(word, addr, size: int, val):
    """``word`` with ``size`` bytes of ``val`` at byte ``addr & 3``."""
    shift = zext(z3.Extract(1, 0, addr), 32) * 8
    mask = bv((1 << (8 * size)) - 1, 32) << shift
    return (word & ~mask) | ((val << shift) & mask)


@register(*[f"global_load_{k}" for k in LOADS])
def _gload(m: Machine, ins) -> None:
    size, ndw, kind = LOADS[ins.base.split("_load_")[1]]
    if "lds" in ins.mods:
        raise Unsupported(ins.text, "loads into LDS")
    addr = global_addr(m, ins, 1, 2)
    m.dword_faults(addr, size * ndw, False, m.active())
    load_into(m, m.mem, ins.ops[0].reg, addr, size, ndw, kind)


def store_data(m: Machine, src: int, ndw: int, size: int, kind: str) -> list:
    out = []
    for i in range(ndw):
        v = m.vuse(src + i)
        out.append(z3.LShR(v, 16) if kind == "hi" else v)
    return out


@register(*[f"global_store_{k}" for k in STORES])
def _gstore(m: Machine, ins) -> None:
    size, ndw, kind = STORES[ins.base.split("_store_")[1]]
    addr = global_addr(m, ins, 0, 2)
    m.dword_faults(addr, size * ndw, True, m.active())
    m.mem = store_lanes(m, m.mem, addr, store_data(m, ins.ops[1].reg, ndw, size, kind), size)


def lds_addr(m: Machine, vaddr: int, offset: int):
    """A lane's LDS byte address, simplified: two ways of writing one address (an
    offset folded into the instruction or added before it) become one term."""
    return m.address("lds", z3.simplify(zext(m.vuse(vaddr), 64) + bv(offset, 64)))


def lds_faults(m: Machine, local, nbytes: int) -> None:
    """An LDS access past the workgroup's LDS or misaligned (lds._checked)."""
    m.accesses.append(("lds", local, nbytes))
    conds = [z3.UGT(local + bv(nbytes, 64), m.ctx.lds_size)]
    align = min(nbytes, 4)
    if align > 1:
        conds.append(low_bits(local, align.bit_length() - 1) != 0)
    m.fault(z3.And(m.active(), z3.Or(*conds)))


@register(*[f"ds_read_{k}" for k in READS])
def _ds_read(m: Machine, ins) -> None:
    size, ndw, kind = READS[ins.base[len("ds_read_"):]]
    local = lds_addr(m, ins.ops[1].reg, int(ins.mods.get("offset", 0)))
    lds_faults(m, local, size * ndw)
    load_into(m, m.lds, ins.ops[0].reg, local, size, ndw, kind)


@register(*[f"ds_write_{k}" for k in WRITES])
def _ds_write(m: Machine, ins) -> None:
    size, ndw, kind = WRITES[ins.base[len("ds_write_"):]]
    local = lds_addr(m, ins.ops[0].reg, int(ins.mods.get("offset", 0)))
    lds_faults(m, local, size * ndw)
    m.lds = store_lanes(m, m.lds, local, store_data(m, ins.ops[1].reg, ndw, size, kind), size)


def _two_offsets(ins) -> tuple[int, int, int]:
    b64 = ins.base.endswith("b64")
    unit = (8 if b64 else 4) * (64 if "st64" in ins.base else 1)
    return (int(ins.mods.get("offset0", 0)) * unit, int(ins.mods.get("offset1", 0)) * unit,
            2 if b64 else 1)


@register("ds_read2_b32", "ds_read2_b64", "ds_read2st64_b32", "ds_read2st64_b64")
def _ds_read2(m: Machine, ins) -> None:
    o0, o1, n = _two_offsets(ins)
    dst, vaddr = ins.ops[0].reg, ins.ops[1].reg
    locals_ = [lds_addr(m, vaddr, o) for o in (o0, o1)]
    for local in locals_:
        lds_faults(m, local, 4 * n)
    vals = [z3.Select(m.lds, dword_index(loc + bv(4 * i, 64) if i else loc))
            for loc in locals_ for i in range(n)]
    for j, v in enumerate(vals):
        m.vwrite(dst + j, v)


@register("ds_write2_b32", "ds_write2_b64", "ds_write2st64_b32", "ds_write2st64_b64")
def _ds_write2(m: Machine, ins) -> None:
    o0, o1, n = _two_offsets(ins)
    vaddr, s0, s1 = ins.ops[0].reg, ins.ops[1].reg, ins.ops[2].reg
    locals_ = [lds_addr(m, vaddr, o) for o in (o0, o1)]
    for local in locals_:
        lds_faults(m, local, 4 * n)
    for local, src in zip(locals_, (s0, s1)):
        m.lds = store_lanes(m, m.lds, local, [m.vuse(src + i) for i in range(n)], 4)


@register("ds_bpermute_b32")
def _ds_bpermute(m: Machine, ins) -> None:
    dst, vaddr, src = ins.ops[0].reg, ins.ops[1].reg, ins.ops[2].reg
    sel = z3.Extract(7, 2, lds_addr(m, vaddr, int(ins.mods.get("offset", 0))))
    got = at_lane(m.vuse(src), sel)
    m.vwrite(dst, z3.If(m.bit(m.exec64(), sel), got, bv(0, 32)))


@register("ds_swizzle_b32")
def _ds_swizzle(m: Machine, ins) -> None:
    dst, src = ins.ops[0].reg, ins.ops[1].reg
    sel = lane_table(tuple(int(x) for x in _swizzle_pattern(ins)), 6)
    m.vwrite(dst, z3.If(m.bit(m.exec64(), sel), at_lane(m.vuse(src), sel), bv(0, 32)))


