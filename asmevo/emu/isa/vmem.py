"""Vector memory: global_*, flat_* and buffer_* loads, stores and atomics.

Addresses are computed per lane as uint64, the active lanes' addresses are
checked by :class:`asmevo.emu.machine.memory.Memory` (one bounds check per
instruction, vectorized), then values are gathered or scattered. Buffer
instructions apply the V# range check first: out-of-range lanes read 0 and
do not write, exactly the masking trick Triton relies on. Buffer loads straight
into LDS (``... lds``) are at the end.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from asmevo.emu.isa import native
from asmevo.emu.isa.atomic import atomic_apply
from asmevo.emu.errors import MemoryFault
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.lds import lds_offsets
from asmevo.emu.isa.operands import SHARED_APERTURE_HI, Operand, raw_reader
from asmevo.emu.machine.racecheck import Conflict
from asmevo.emu.machine.state import M0

U32, U64, I64 = np.uint32, np.uint64, np.int64

# name suffix -> (bytes per element, dwords, kind)
LOADS = {"dword": (4, 1, "u"), "dwordx2": (4, 2, "u"), "dwordx3": (4, 3, "u"),
         "dwordx4": (4, 4, "u"), "ubyte": (1, 1, "u"), "sbyte": (1, 1, "s"),
         "ushort": (2, 1, "u"), "sshort": (2, 1, "s"),
         "short_d16": (2, 1, "lo"), "short_d16_hi": (2, 1, "hi"),
         "ubyte_d16": (1, 1, "lo"), "ubyte_d16_hi": (1, 1, "hi"),
         "sbyte_d16": (1, 1, "slo"), "sbyte_d16_hi": (1, 1, "shi")}
STORES = {"dword": (4, 1, "lo"), "dwordx2": (4, 2, "lo"), "dwordx3": (4, 3, "lo"),
          "dwordx4": (4, 4, "lo"), "byte": (1, 1, "lo"), "byte_d16_hi": (1, 1, "hi"),
          "short": (2, 1, "lo"), "short_d16_hi": (2, 1, "hi")}


def _where(c):
    return (c.kernel, c.address)


def _active_flat(c, arr: np.ndarray) -> np.ndarray:
    if np.shape(arr) != (c.w, 64):     # a wave's value for its lanes: broadcast
        arr = np.broadcast_to(arr, (c.w, 64))
    return arr.reshape(-1) if c.mask is None else arr[c.mask]


def _scatter_lanes(c, vals: np.ndarray, dtype=U32) -> np.ndarray:
    if c.mask is None:
        return vals.reshape(c.w, 64)
    out = np.zeros((c.w, 64), dtype)
    out[c.mask] = vals
    return out


# -- address generation -------------------------------------------------------

def _global_addr(ins: Insn, vaddr_i: int, saddr_i: int | None):
    offset = int(ins.mods.get("offset", 0))
    va = ins.ops[vaddr_i]
    sa = ins.ops[saddr_i] if saddr_i is not None and saddr_i < len(ins.ops) else None
    off = U64(offset & 0xFFFFFFFFFFFFFFFF)
    if sa is not None and sa.kind == "s":
        rv = raw_reader(va, 32, True)
        rs = raw_reader(sa, 64, True)
        return lambda c: rs(c) + rv(c).astype(U64) + off
    rv = raw_reader(va, 64, True)
    return lambda c: rv(c) + off


def _load_values(c, addrs_flat: np.ndarray, size: int, ndw: int) -> list[np.ndarray]:
    mem = c.launch.mem
    offs = mem.check(addrs_flat, size * ndw, False, _where(c))
    if ndw == 1:
        return [mem.load(offs, size)]
    return [mem.load(offs + 4 * i, 4) for i in range(ndw)]


def _write_loaded(c, dst: int, vals: list[np.ndarray], size: int, kind: str) -> None:
    for i, v in enumerate(vals):
        if size == 4:
            full = _scatter_lanes(c, v)
            c.vw(dst + i, full)
            continue
        v32 = v.astype(U32)
        if kind == "s":
            v32 = v.view(np.int8 if size == 1 else np.int16).astype(np.int32).view(U32)
        if kind in ("u", "s"):
            c.vw(dst, _scatter_lanes(c, v32))
            continue
        if kind in ("slo", "shi"):
            v32 = v.view(np.int8).astype(np.int16).view(np.uint16).astype(U32)
        old = _active_flat(c, c.vr(dst))
        if kind in ("lo", "slo"):
            new = (old & U32(0xFFFF0000)) | v32
        else:
            new = (old & U32(0xFFFF)) | (v32 << U32(16))
        c.vw(dst, _scatter_lanes(c, new))


def _store_values(c, src: int, ndw: int, size: int, kind: str) -> list[np.ndarray]:
    out = []
    for i in range(ndw):
        v = _active_flat(c, c.vr(src + i))
        if size == 4:
            out.append(v)
        elif size == 2:
            out.append(((v >> U32(16)) if kind == "hi" else v).astype(np.uint16))
        else:
            out.append(((v >> U32(16)) if kind == "hi" else v).astype(np.uint8))
    return out


def _do_store(c, addrs_flat, vals, size, ndw, kept=None):
    """Store the active lanes' values (``kept``: which of them, where a range check
    dropped some: a buffer store's out-of-range lanes)."""
    mem = c.launch.mem
    offs = mem.check(addrs_flat, size * ndw, True, _where(c))
    if offs.size > 1:
        _lane_conflicts(c, mem, addrs_flat, vals, size * ndw, kept)
    if ndw == 1:
        mem.store(offs, size, vals[0])
    else:
        for i in range(ndw):
            mem.store(offs + 4 * i, 4, vals[i])


def _lane_conflicts(c, mem, addrs: np.ndarray, vals: list[np.ndarray], span: int,
                    kept=None) -> None:
    """Note lanes of one wave whose ``span``-byte stores overlap, unless they store the
    same bytes at the same address (several lanes storing one value is defined)."""
    a = addrs.astype(np.int64)
    if (np.diff(a) >= span).all():          # ascending without overlap: the usual store
        return
    wave = _active_flat(c, np.arange(c.w)[:, None])
    if kept is not None:
        wave = wave[kept]
    order = np.lexsort((a, wave))
    a, w = a[order], wave[order]
    close = np.flatnonzero((w[1:] == w[:-1]) & (a[1:] < a[:-1] + span))
    if close.size == 0:
        return
    data = np.stack([np.asarray(v)[order] for v in vals])
    same = (a[close + 1] == a[close]) & (data[:, close + 1] == data[:, close]).all(axis=0)
    bad = close[~same]
    if bad.size:
        mem.note_conflict(f"{bad.size + 1} lanes of one wave wrote overlapping {span}-byte "
                          "stores with different values", _where(c), int(a[bad[0]]),
                          int(bad.size + 1))


def _flat_split(c, addrs_flat):
    """Lanes whose flat address falls in the shared (LDS) aperture."""
    return (addrs_flat >> U64(32)) == U64(SHARED_APERTURE_HI)


# -- global / flat loads and stores ---------------------------------------------

@register(*[f"global_load_{k}" for k in LOADS], *[f"flat_load_{k}" for k in LOADS])
def _gload(ins: Insn) -> Decoded:
    kind_s = ins.base.split("_load_")[1]
    size, ndw, kind = LOADS[kind_s]
    flat = ins.base.startswith("flat")
    if "lds" in ins.mods:
        raise ins.fail("loads into LDS")
    dst = ins.ops[0].reg
    addr = _global_addr(ins, 1, None if flat else 2)

    def run(c):
        if c.lanes == 0:
            return
        a = _active_flat(c, addr(c))
        if flat and _flat_split(c, a).any():
            vals = _flat_lds_load(c, a, size, ndw)
        else:
            vals = _load_values(c, a, size, ndw)
        _write_loaded(c, dst, vals, size, kind)
    direct = None if flat or size != 4 else _direct_addr(ins, 1, 2)
    if direct is None:
        return op(run)
    vaddr, saddr, offset = direct

    def fused(c):       # the common case straight from the heap (asmevo.emu.isa.native)
        if c.lanes == 0:
            return
        lib = native.library()
        got = 1 if lib is None else native.global_load(lib, c, vaddr, saddr, offset, ndw, dst)
        if got == 2:
            raise Conflict("a global access to the private segment")
        if got == 3:
            raise Conflict("a global byte read after a write")
        if got:
            run(c)
    return op(fused)


def _direct_addr(ins: Insn, vaddr_i: int, saddr_i: int):
    """``(vaddr, saddr, offset)`` of a global access whose address is a VGPR + an SGPR
    pair + the offset, or a VGPR pair + the offset (saddr -1): what
    :func:`asmevo.emu.isa.native.global_load` computes; else None."""
    va = ins.ops[vaddr_i]
    sa = ins.ops[saddr_i] if saddr_i < len(ins.ops) else None
    if va.kind != "v" or va.neg or va.abs:
        return None
    if sa is not None and sa.kind == "s":
        return va.reg, sa.reg, int(ins.mods.get("offset", 0))
    if sa is not None and sa.text != "off":
        return None
    return va.reg, -1, int(ins.mods.get("offset", 0))


@register(*[f"global_store_{k}" for k in STORES], *[f"flat_store_{k}" for k in STORES])
def _gstore(ins: Insn) -> Decoded:
    kind_s = ins.base.split("_store_")[1]
    size, ndw, kind = STORES[kind_s]
    flat = ins.base.startswith("flat")
    src = ins.ops[1].reg
    addr = _global_addr(ins, 0, None if flat else 2)

    def run(c):
        if c.lanes == 0:
            return
        a = _active_flat(c, addr(c))
        vals = _store_values(c, src, ndw, size, kind)
        if flat and _flat_split(c, a).any():
            _flat_lds_store(c, a, vals, size, ndw)
        else:
            _do_store(c, a, vals, size, ndw)
    return op(run)


def _flat_lds_load(c, a, size, ndw):
    lds = _flat_split(c, a)
    if not lds.all():
        raise MemoryFault("flat access mixes LDS and global lanes (not modeled)",
                          kernel=c.kernel, address=c.address)
    local = (a & U64(0xFFFFFFFF)).astype(np.int64)
    offs = _lds_offs_active(c, local, size * ndw)
    st = c.st
    if st.shadow is not None:
        st.shadow.lds_read(offs, size * ndw)
    if st.tracker is not None:
        st.tracker.access(st, offs, size * ndw, False)
    if size == 4:
        return [st.lds.view(U32)[(offs >> 2) + i] for i in range(ndw)] if ndw > 1 else \
            [st.lds.view(U32)[offs >> 2]]
    if size == 2:
        return [st.lds.view(np.uint16)[offs >> 1]]
    return [st.lds[offs]]


def _flat_lds_store(c, a, vals, size, ndw):
    if not _flat_split(c, a).all():
        raise MemoryFault("flat access mixes LDS and global lanes (not modeled)",
                          kernel=c.kernel, address=c.address)
    local = (a & U64(0xFFFFFFFF)).astype(np.int64)
    offs = _lds_offs_active(c, local, size * ndw)
    st = c.st
    if st.shadow is not None:
        st.shadow.lds_write(offs, size * ndw)
    if st.tracker is not None:
        st.tracker.access(st, offs, size * ndw, True)
    for i in range(ndw):
        if size == 4:
            st.lds.view(U32)[(offs >> 2) + i] = vals[i]
        elif size == 2:
            st.lds.view(np.uint16)[offs >> 1] = vals[i]
        else:
            st.lds[offs] = vals[i]


def _lds_offs_active(c, local_flat, nbytes):
    wg = np.broadcast_to(c.st.wg_of_wave[c.idx][:, None], (c.w, 64))
    wg = wg.reshape(-1) if c.mask is None else wg[c.mask]
    return lds_offsets(c, local_flat, wg, nbytes)


# -- atomics ---------------------------------------------------------------------

def _f32(x):
    return x.view(np.float32)


ATOMIC32 = {
    "add": lambda o, d: o + d, "sub": lambda o, d: o - d, "swap": lambda o, d: d,
    "smin": lambda o, d: np.minimum(o.view(np.int32), d.view(np.int32)).view(U32),
    "smax": lambda o, d: np.maximum(o.view(np.int32), d.view(np.int32)).view(U32),
    "umin": np.minimum, "umax": np.maximum,
    "and": lambda o, d: o & d, "or": lambda o, d: o | d, "xor": lambda o, d: o ^ d,
    "inc": lambda o, d: np.where(o >= d, U32(0), o + U32(1)),
    "dec": lambda o, d: np.where((o == 0) | (o > d), d, o - U32(1)),
    "add_f32": lambda o, d: (_f32(o) + _f32(d)).astype(np.float32).view(U32),
    "pk_add_f16": lambda o, d: _pk_add_f16(o, d),
}
ATOMIC64 = {
    "add_x2": lambda o, d: o + d, "sub_x2": lambda o, d: o - d, "swap_x2": lambda o, d: d,
    "smin_x2": lambda o, d: np.minimum(o.view(I64), d.view(I64)).view(U64),
    "smax_x2": lambda o, d: np.maximum(o.view(I64), d.view(I64)).view(U64),
    "umin_x2": np.minimum, "umax_x2": np.maximum,
    "and_x2": lambda o, d: o & d, "or_x2": lambda o, d: o | d, "xor_x2": lambda o, d: o ^ d,
    "inc_x2": lambda o, d: np.where(o >= d, U64(0), o + U64(1)),
    "dec_x2": lambda o, d: np.where((o == 0) | (o > d), d, o - U64(1)),
    "add_f64": lambda o, d: (o.view(np.float64) + d.view(np.float64)).view(U64),
    # CDNA3 pseudocode: src < tmp ? src : tmp (a plain comparison: NaN or equal keeps memory)
    "min_f64": lambda o, d: np.where(d.view(np.float64) < o.view(np.float64), d, o),
    "max_f64": lambda o, d: np.where(d.view(np.float64) > o.view(np.float64), d, o),
}


def _pk_add_f16(o, d):
    lo = (o & U32(0xFFFF)).astype(np.uint16).view(np.float16) + \
        (d & U32(0xFFFF)).astype(np.uint16).view(np.float16)
    hi = (o >> U32(16)).astype(np.uint16).view(np.float16) + \
        (d >> U32(16)).astype(np.uint16).view(np.float16)
    return lo.view(np.uint16).astype(U32) | (hi.view(np.uint16).astype(U32) << U32(16))


@register(*[f"{s}_atomic_{k}" for s in ("global", "flat") for k in
            list(ATOMIC32) + list(ATOMIC64) + ["cmpswap", "cmpswap_x2"]])
def _atomic(ins: Insn) -> Decoded:
    name = ins.base.split("_atomic_")[1]
    flat = ins.base.startswith("flat")
    wide = name.endswith("_x2") or name.endswith("f64")
    ret = bool(ins.mods.get("glc") or ins.mods.get("sc0"))
    first = 1 if ret else 0
    dst = ins.ops[0].reg if ret else None
    addr = _global_addr(ins, first, None if flat else first + 2)
    data_reg = ins.ops[first + 1].reg
    cmpswap = name.startswith("cmpswap")
    fn = None if cmpswap else (ATOMIC64[name] if wide else ATOMIC32[name])
    size = 8 if wide else 4

    def run(c):
        if c.lanes == 0:
            return
        a = _active_flat(c, addr(c))
        mem = c.launch.mem
        offs = mem.check(a, size, True, _where(c))
        if wide:
            data = _active_flat(c, c.vr64(data_reg))
            old = mem.load(offs, 4).astype(U64) | (mem.load(offs + 4, 4).astype(U64) << U64(32))
            cmpv = _active_flat(c, c.vr64(data_reg + 2)) if cmpswap else None
        else:
            data = _active_flat(c, c.vr(data_reg))
            old = mem.load(offs, 4)
            cmpv = _active_flat(c, c.vr(data_reg + 1)) if cmpswap else None
        if cmpswap:   # data = {src, cmp}: write src where memory == cmp
            res = atomic_apply(old, data, offs, None, cmp=cmpv)
        else:
            res = atomic_apply(old, data, offs, fn)
        if isinstance(res, tuple):
            pre, new = res
            last = {}
            for i in range(offs.size):
                last[int(offs[i])] = i
            sel = np.array(sorted(last.values()))
            woffs, wvals = offs[sel], new[sel]
        else:
            pre, woffs, wvals = old, offs, res
        if wide:
            mem.store(woffs, 4, (wvals & U64(0xFFFFFFFF)).astype(U32))
            mem.store(woffs + 4, 4, (wvals >> U64(32)).astype(U32))
            if dst is not None:
                c.vw64(dst, _scatter_lanes(c, pre, U64))
        else:
            mem.store(woffs, 4, wvals.astype(U32))
            if dst is not None:
                c.vw(dst, _scatter_lanes(c, pre))
    return op(run)


# -- buffer ----------------------------------------------------------------------

def _buffer_parts(ins: Insn):
    """(vdata index, vaddr operand, srsrc reg, soffset reader, offen, idxen, inst offset)."""
    vaddr = ins.ops[1]
    rsrc = ins.ops[2].reg
    soff = raw_reader(ins.ops[3], 32, True) if len(ins.ops) > 3 else (lambda c: U32(0))
    return vaddr, rsrc, soff, bool(ins.mods.get("offen")), bool(ins.mods.get("idxen")), \
        int(ins.mods.get("offset", 0))


def _buffer_addr(ins: Insn, elem: int = 4, count: int = 4):
    """The address closure of a buffer access of ``count`` ``elem``-byte elements."""
    vaddr, rsrc, soff, offen, idxen, inst = _buffer_parts(ins)
    rv = raw_reader(vaddr, 32, True) if vaddr.kind == "v" else None
    rv2 = raw_reader(type(vaddr)("v", vaddr.text, vaddr.reg + 1), 32, True) \
        if (offen and idxen) else None

    def addr(c):
        s = c.st.s
        d0 = s[rsrc, c.idx].astype(U64)
        d1 = s[rsrc + 1, c.idx].astype(U64)
        nrec = s[rsrc + 2, c.idx].astype(U64)[:, None]
        d3 = s[rsrc + 3, c.idx]
        if np.any(d3 & U32(1 << 23)):
            raise MemoryFault("buffer resource with ADD_TID_ENABLE is not modeled",
                              kernel=c.kernel, address=c.address)
        base = (d0 | ((d1 & U64(0xFFFF)) << U64(32)))[:, None]
        stride = ((d1 >> U64(16)) & U64(0x3FFF))[:, None]
        zero = np.zeros((c.w, 64), U64)
        index = rv(c).astype(U64) + zero if idxen else zero
        voff = (rv2(c) if rv2 is not None else rv(c)).astype(U64) + zero if offen else zero
        offset = voff + U64(inst)
        so = np.broadcast_to(soff(c), (c.w, 1)).astype(U64)
        a = base + so + offset + stride * index
        if not idxen:
            # the index check applies only to IDXEN accesses; otherwise num_records is bytes
            stride = np.zeros_like(stride)
            _soffset_range_check(c, offset, so, nrec, elem, count)
        return a, offset, stride, index, nrec
    return addr


def _soffset_range_check(c, offset, so, nrec, elem: int, count: int) -> None:
    """Refuse a byte range check that SOFFSET decides: LLVM documents SOFFSET as excluded
    from bounds checking, AMD's functional model of gfx950 hardware (rocjitsu) includes it.
    Refused only where the two readings disagree for an active lane's element."""
    if not so.any():
        return
    differ = np.zeros(offset.shape, bool)
    for i in range(count):
        end = offset + U64(elem * (i + 1))
        differ |= (end <= nrec) != (end + so <= nrec)
    if c.mask is not None:
        differ &= c.mask
    if differ.any():
        from asmevo.emu.errors import UnsupportedInstruction
        raise UnsupportedInstruction("buffer access", c.kernel, c.address,
                                     "nonzero SOFFSET near num_records: whether it takes part "
                                     "in the range check is not specified")


def _in_range(offset, stride, index, nrec, nbytes):
    raw = stride == 0
    return np.where(raw, offset + U64(nbytes) <= nrec, index < nrec)


@register(*[f"buffer_load_{k}" for k in LOADS])
def _bload(ins: Insn) -> Decoded:
    size, ndw, kind = LOADS[ins.base.split("_load_")[1]]
    if "lds" in ins.mods:
        return buffer_load_lds(ins)
    dst = ins.ops[0].reg
    addr = _buffer_addr(ins, size, ndw)

    def run(c):
        if c.lanes == 0:
            return
        a, offset, stride, index, nrec = addr(c)
        for i in range(ndw):
            ok = _active_flat(c, _in_range(offset + U64(4 * i), stride, index, nrec, size))
            af = _active_flat(c, a + U64(4 * i))
            vals = np.zeros(af.shape, {4: U32, 2: np.uint16, 1: np.uint8}[size])
            if ok.any():
                vals[ok] = _load_values(c, af[ok], size, 1)[0]
            _write_loaded(c, dst + i, [vals], size, kind)
    return op(run)


@register(*[f"buffer_store_{k}" for k in STORES])
def _bstore(ins: Insn) -> Decoded:
    size, ndw, kind = STORES[ins.base.split("_store_")[1]]
    src = ins.ops[0].reg
    addr = _buffer_addr(ins, size, ndw)

    def run(c):
        if c.lanes == 0:
            return
        a, offset, stride, index, nrec = addr(c)
        vals = _store_values(c, src, ndw, size, kind)
        for i in range(ndw):
            ok = _active_flat(c, _in_range(offset + U64(4 * i), stride, index, nrec, size))
            af = _active_flat(c, a + U64(4 * i))
            if ok.any():
                _do_store(c, af[ok], [vals[i][ok]], size, 1, ok)
    return op(run)


# Buffer loads straight into LDS: ``buffer_load_dword VADDR, SRSRC, SOFFSET [offen|idxen]
# [offset:N] lds`` (CDNA3 ISA 9.1.9, "Buffer loads to LDS").
#
# The memory side is an ordinary buffer load (same address, same V# range
# check: out-of-range lanes return 0); nothing is written to VGPRs. Each active
# lane's dword goes to LDS at ``M0[15:0] + inst_offset + 4 * lane`` within the
# workgroup's allocation (the guide: LDS_offset = M0[15:0]; the instruction
# offset moves both addresses, which is how AITer's kernels step M0 by 0x100
# per 64-lane dword load and use offset:256/512 with an unchanged M0). An LDS
# address outside the allocation is a fault (hardware clamps it; a kernel that
# relies on that is refused rather than silently truncated). The guide lists
# load-to-LDS for ubyte/sbyte/ushort/sshort/dword/format_x; only the dword form
# (the one gfx942 code uses) is modelled, the others are refused.
_LANES = np.arange(64, dtype=I64)


def with_vdata_slot(ins: Insn) -> Insn:
    """``ins`` with the operand layout of the VDATA forms (VDATA, VADDR, SRSRC, SOFFSET):
    the LDS form has no VDATA, so an ``off`` takes its place. Every reader of a buffer
    instruction's operands goes through this, so none mistakes SOFFSET for SRSRC."""
    if "lds" not in ins.mods:
        return ins
    if len(ins.ops) != 3:
        raise ins.fail("expected VADDR, SRSRC, SOFFSET")
    return replace(ins, ops=[Operand("off", "off")] + list(ins.ops))


def buffer_lds_addr(ins: Insn):
    """The memory-side address closure of an LDS-form buffer load (see _buffer_addr)."""
    return _buffer_addr(with_vdata_slot(ins), 4, 1)


def buffer_load_lds(ins: Insn) -> Decoded:
    """The executor of a ``buffer_load_* ... lds`` instruction."""
    if ins.base != "buffer_load_dword":
        raise ins.fail("loads into LDS other than buffer_load_dword")
    addr = buffer_lds_addr(ins)
    inst = int(ins.mods.get("offset", 0))

    def run(c):
        if c.lanes == 0:
            return
        a, offset, stride, index, nrec = addr(c)
        ok = _active_flat(c, _in_range(offset, stride, index, nrec, 4))
        af = _active_flat(c, a)
        vals = np.zeros(af.shape, U32)
        if ok.any():
            vals[ok] = _load_values(c, af[ok], 4, 1)[0]
        base = (c.sr(M0).astype(I64) & 0xFFFF) + inst
        local = _active_flat(c, base[:, None] + 4 * _LANES[None, :])
        offs = _lds_offs_active(c, local, 4)
        if c.st.tracker is not None:
            c.st.tracker.access(c.st, offs, 4, True)
        c.st.lds.view(U32)[offs >> 2] = vals
    return op(run)
