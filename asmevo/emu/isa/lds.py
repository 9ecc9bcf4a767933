"""LDS (ds_*): per-workgroup shared memory, plus the DS cross-lane ops
(ds_bpermute_b32, ds_permute_b32, ds_swizzle_b32).

Each workgroup of the batch owns ``lds_bytes`` (the descriptor's
group_segment_fixed_size plus the launch's dynamic LDS) of one flat byte array.
An access past that size, or misaligned, is a fault (the hardware would
silently clamp; a candidate that does so is wrong either way).
"""
from __future__ import annotations

import re

import numpy as np

from asmevo.emu.isa import native
from asmevo.emu.isa.atomic import atomic_apply
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.errors import MemoryFault

U32, U64, I64 = np.uint32, np.uint64, np.int64


def lds_offsets(c, local: np.ndarray, wg: np.ndarray, nbytes: int) -> np.ndarray:
    """Checked byte offsets into the batch's LDS array for flat (active-lane) addresses."""
    local = _checked(c, local, nbytes)
    return wg.astype(I64, copy=False) * max(c.st.lds_bytes, 4) + local


def _checked(c, local: np.ndarray, nbytes: int) -> np.ndarray:
    """``local`` (int64) after the bounds and alignment check of an LDS access."""
    size = c.st.lds_bytes
    local = local.astype(I64, copy=False)
    align = min(nbytes, 4)
    # one pass each for the common case (all in bounds, aligned); the element-wise
    # checks only to name the first bad address
    if local.size and (int(local.min()) < 0 or int(local.max()) + nbytes > size or
                       align > 1 and int(np.bitwise_or.reduce(local)) & (align - 1)):
        bad = (local < 0) | (local + nbytes > size)
        mis = (local & (align - 1)) != 0 if align > 1 else np.zeros(local.shape, bool)
        i = int(np.argmax(bad | mis))
        a = int(local[i])
        what = "misaligned" if mis[i] and not bad[i] else "out-of-bounds"
        raise MemoryFault(f"{what} {nbytes}-byte LDS access at LDS address 0x{a:x} "
                          f"(LDS size {size} bytes)", kernel=c.kernel, address=c.address,
                          byte_address=a)
    return local


def _active(c, arr):
    if arr.shape != (c.w, 64):      # a wave's value for its lanes: broadcast
        arr = np.broadcast_to(arr, (c.w, 64))
    return arr.reshape(-1) if c.mask is None else arr[c.mask]


def _scatter(c, vals, dtype=U32):
    if c.mask is None:
        return vals.reshape(c.w, 64)
    out = np.zeros((c.w, 64), dtype)
    out[c.mask] = vals
    return out


def _wg(c):
    return _active(c, c.st.wg_of_wave[c.idx][:, None])


def _addr_offs(c, vaddr: int, offset: int, nbytes: int, *more: int):
    """Checked offsets of ``vaddr`` + ``offset`` (and of each of ``more``, checked in
    that order, for the two-address forms)."""
    raw = _active(c, c.vr(vaddr))
    base = raw.astype(I64)
    wgb = c.lds_base
    if wgb is None:     # each active lane's workgroup's first byte, once per Ctx and EXEC
        wgb = _wg(c).astype(I64) * max(c.st.lds_bytes, 4)
        c.lds_base = wgb
    # the bounds and alignment of base + o follow from base's min, max and or-reduce
    # (taken once, on the 32-bit addresses): the element-wise check (_checked) only
    # where one fails, to name the first bad address as it always did
    span = (int(raw.min()), int(raw.max()), int(np.bitwise_or.reduce(raw))) if raw.size \
        else None
    out, at = [], None
    for o in (offset, *more):
        if _fits(c, span, o, nbytes):
            if at is None:
                at = wgb + base         # wgb + (base + o) is (wgb + base) + o in int64
            out.append(at + o if o else at)
        else:
            out.append(wgb + _checked(c, base + o, nbytes))
    return out if more else out[0]


def _addr_dw(c, vaddr: int, nbytes: int, *offsets: int):
    """(the dword index into the batch's LDS of each lane's ``vaddr`` + o, for each o of
    ``offsets``; the or-reduce of the lanes' addresses) for an access of ``nbytes`` >= 4
    bytes: :func:`_addr_offs`'s checks in the same order, then its offsets >> 2 (4-byte
    aligned once checked). The callers run only without a definedness shadow."""
    raw = _active(c, c.vr(vaddr))
    wgb = c.lds_base
    stride = max(c.st.lds_bytes, 4)
    if wgb is None:
        wgb = _wg(c).astype(I64) * stride
        c.lds_base = wgb
    bits = int(np.bitwise_or.reduce(raw)) if raw.size else 0
    span = (int(raw.min()), int(raw.max()), bits) if raw.size else None
    out, at = [], None
    for o in offsets:
        if stride % 4 == 0 and _fits(c, span, o, nbytes):
            # fits: o and every address are multiples of 4, and so is wgb: the dword of
            # wgb + base + o is that of wgb + base plus o >> 2
            if at is None:
                at = raw.astype(I64)    # (wgb + base) >> 2, in place
                at += wgb
                at >>= 2
            out.append(at + (o >> 2) if o else at)
        else:
            out.append((wgb + _checked(c, raw.astype(I64) + o, nbytes)) >> 2)
    return out, bits


def _fits(c, span, o: int, nbytes: int) -> bool:
    """Whether every lane's ``address + o`` passes :func:`_checked` (``span``: the
    addresses' min, max and or-reduce; None: no lane), decided without a pass over them."""
    if span is None:
        return True
    lo, hi, bits = span
    align = min(nbytes, 4)
    if lo + o < 0 or hi + o + nbytes > c.st.lds_bytes:
        return False
    if align > 1:
        if o % align:
            return False        # the lanes' low bits then need the element-wise check
        return not bits & (align - 1)
    return True


def _rd(st, offs, size):
    if st.shadow is not None:
        st.shadow.lds_read(offs, size)
    if st.tracker is not None:
        st.tracker.access(st, offs, size, False)
    # np.take: the gather of a fancy index without its generality (offsets are checked)
    if size == 4:
        return np.take(st.lds.view(U32), offs >> 2)
    if size == 2:
        return np.take(st.lds.view(np.uint16), offs >> 1)
    return np.take(st.lds, offs)


def _wr(st, offs, size, vals):
    if st.shadow is not None:
        st.shadow.lds_write(offs, size)
    if st.tracker is not None:
        st.tracker.access(st, offs, size, True)
    if size == 4:
        st.lds.view(U32)[offs >> 2] = vals
    elif size == 2:
        st.lds.view(np.uint16)[offs >> 1] = vals
    else:
        st.lds[offs] = vals


READS = {"b32": (4, 1, "u"), "b64": (4, 2, "u"), "b96": (4, 3, "u"), "b128": (4, 4, "u"),
         "u8": (1, 1, "u"), "i8": (1, 1, "s"), "u16": (2, 1, "u"), "i16": (2, 1, "s"),
         "u16_d16": (2, 1, "lo"), "u16_d16_hi": (2, 1, "hi"), "u8_d16": (1, 1, "lo"),
         "u8_d16_hi": (1, 1, "hi"), "i8_d16": (1, 1, "slo"), "i8_d16_hi": (1, 1, "shi")}
WRITES = {"b32": (4, 1, "lo"), "b64": (4, 2, "lo"), "b96": (4, 3, "lo"), "b128": (4, 4, "lo"),
          "b8": (1, 1, "lo"), "b16": (2, 1, "lo"), "b8_d16_hi": (1, 1, "hi"),
          "b16_d16_hi": (2, 1, "hi")}


def _per_dword(ins: Insn, table: dict, prefix: str, vaddr: int, body) -> Decoded:
    """A ds_read_*/ds_write_* form: ``(size, dwords, kind)`` from ``table`` by the mnemonic's
    tail, the lanes' LDS offsets from ``vaddr`` + the offset modifier, then
    ``body(c, offs, i, size, kind)`` once per dword ``i`` (offs: that dword's lane offsets)."""
    size, ndw, kind = table[ins.base[len(prefix):]]
    offset = int(ins.mods.get("offset", 0))

    def run(c):
        if c.lanes == 0:
            return
        offs = _addr_offs(c, vaddr, offset, size * ndw)
        for i in range(ndw):
            body(c, offs + 4 * i, i, size, kind)
    return op(run)


def _gather_dwords(st, dw: np.ndarray, ndw: int, aligned: bool) -> list[np.ndarray]:
    """LDS dwords ``dw + i`` (i < ``ndw``) per lane; ``aligned``: every ``dw`` a multiple of
    ``ndw`` (2 or 4), then one gather of ``ndw``-dword rows gives the same values.
    ``mode="clip"`` (a quarter faster than the default's bounds errors): the indices
    are in bounds, every lane's address checked against its workgroup's LDS size."""
    lds32 = st.lds.view(U32)
    if aligned and ndw in (2, 4):
        rows = lds32[:lds32.size // ndw * ndw].reshape(-1, ndw)
        got = np.take(rows, dw >> (ndw // 2), axis=0, mode="clip")
        return [got[:, i] for i in range(ndw)]
    return [np.take(lds32, dw + i if i else dw, mode="clip") for i in range(ndw)]


def _native(c, write: bool, vaddr: int, offsets: tuple, ndw: int, regs: tuple) -> bool:
    """The access straight on the register file and LDS, the race tracker's note first
    (:func:`asmevo.emu.isa.native.lds`): whether it ran; else nothing happened and the numpy
    path runs (a lane out of bounds or unaligned, no compiled library, a tracker that
    notes it in numpy)."""
    lib = native.library()
    if lib is None:
        return False
    st = c.st
    tracker = st.tracker
    arrays = None
    if tracker is not None:
        arrays = tracker.arrays(st, c)
        if arrays is None:
            return False
    got = native.lds(lib, c, write, vaddr, offsets, ndw, regs, arrays)
    if got >= 2:
        tracker.conflict(got)
    return got == 0


def _dword_form(ins: Insn, table: dict, prefix: str, vaddr: int, body, fast,
                write: bool, reg: int) -> Decoded:
    """:func:`_per_dword` for the forms of 4-byte dwords, with ``fast(c, dw, bits, ndw)``
    (``dw``: the lanes' first dword index, ``bits``: the or-reduce of their addresses)
    where no definedness shadow is kept, and before it the compiled access
    (:func:`_native`: ``write``, the data or destination VGPR ``reg``); the shadow's
    reruns take ``body`` as before."""
    size, ndw, kind = table[ins.base[len(prefix):]]
    offset = int(ins.mods.get("offset", 0))
    if size != 4:
        return _per_dword(ins, table, prefix, vaddr, body)

    def run(c):
        if c.lanes == 0:
            return
        if c.st.shadow is not None:
            offs = _addr_offs(c, vaddr, offset, size * ndw)
            for i in range(ndw):
                body(c, offs + 4 * i, i, size, kind)
            return
        if _native(c, write, vaddr, (offset,), ndw, (reg,)):
            return
        (dw,), bits = _addr_dw(c, vaddr, size * ndw, offset)
        fast(c, dw, bits | offset | max(c.st.lds_bytes, 4), ndw)
    return op(run)


@register(*[f"ds_read_{k}" for k in READS])
def _ds_read(ins: Insn) -> Decoded:
    dst = ins.ops[0].reg

    def body(c, offs, i, size, kind):
        v = _rd(c.st, offs, size)
        if size == 4:
            c.vw(dst + i, _scatter(c, v))
            return
        if kind == "s":
            v32 = v.view(np.int8 if size == 1 else np.int16).astype(np.int32).view(U32)
        elif kind in ("slo", "shi"):
            v32 = v.view(np.int8).astype(np.int16).view(np.uint16).astype(U32)
        else:
            v32 = v.astype(U32)
        if kind in ("u", "s"):
            c.vw(dst, _scatter(c, v32))
            return
        old = _active(c, c.vr(dst))
        new = (old & U32(0xFFFF0000)) | v32 if kind in ("lo", "slo") else \
            (old & U32(0xFFFF)) | (v32 << U32(16))
        c.vw(dst, _scatter(c, new))

    def fast(c, dw, low, ndw):
        # the tracker sees the instruction's dwords at once (racecheck.access_dwords),
        # then one gather per dword (or of aligned rows)
        st = c.st
        if st.tracker is not None:
            st.tracker.access_dwords(st, [dw], ndw, False)
        for i, v in enumerate(_gather_dwords(st, dw, ndw, not low & (4 * ndw - 1))):
            c.vw(dst + i, _scatter(c, v))
    return _dword_form(ins, READS, "ds_read_", ins.ops[1].reg, body, fast, False, dst)


@register(*[f"ds_write_{k}" for k in WRITES])
def _ds_write(ins: Insn) -> Decoded:
    src = ins.ops[1].reg

    def body(c, offs, i, size, kind):
        v = _active(c, c.vr(src + i))
        if kind == "hi":
            v = v >> U32(16)
        _wr(c.st, offs, size, v.astype({4: U32, 2: np.uint16, 1: np.uint8}[size]))

    def fast(c, dw, low, ndw):
        st = c.st
        if st.tracker is not None:
            st.tracker.access_dwords(st, [dw], ndw, True)
        lds32 = st.lds.view(U32)
        for i in range(ndw):    # dword by dword, lanes in order: the last write wins
            lds32[dw + i if i else dw] = _active(c, c.vr(src + i))
    return _dword_form(ins, WRITES, "ds_write_", ins.ops[0].reg, body, fast, True, src)


@register("ds_read2_b32", "ds_read2_b64", "ds_read2st64_b32", "ds_read2st64_b64")
def _ds_read2(ins: Insn) -> Decoded:
    b64 = ins.base.endswith("b64")
    unit = (8 if b64 else 4) * (64 if "st64" in ins.base else 1)
    dst, vaddr = ins.ops[0].reg, ins.ops[1].reg
    o0, o1 = int(ins.mods.get("offset0", 0)) * unit, int(ins.mods.get("offset1", 0)) * unit
    n = 2 if b64 else 1

    def run(c):
        if c.lanes == 0:
            return
        st = c.st
        if st.shadow is not None:
            offs = _addr_offs(c, vaddr, o0, 4 * n, o1)   # before any write
            vals = [_rd(st, offs[k] + 4 * i, 4) for k in range(2) for i in range(n)]
        elif _native(c, False, vaddr, (o0, o1), n, (dst,)):
            return
        else:
            dws, _ = _addr_dw(c, vaddr, 4 * n, o0, o1)   # before any write
            if st.tracker is not None:
                st.tracker.access_dwords(st, dws, n, False)
            lds32 = st.lds.view(U32)
            vals = [np.take(lds32, dws[k] + i if i else dws[k], mode="clip")   # checked
                    for k in range(2) for i in range(n)]
        for j, v in enumerate(vals):
            c.vw(dst + j, _scatter(c, v))
    return op(run)


@register("ds_write2_b32", "ds_write2_b64", "ds_write2st64_b32", "ds_write2st64_b64")
def _ds_write2(ins: Insn) -> Decoded:
    b64 = ins.base.endswith("b64")
    unit = (8 if b64 else 4) * (64 if "st64" in ins.base else 1)
    vaddr, s0, s1 = ins.ops[0].reg, ins.ops[1].reg, ins.ops[2].reg
    o0, o1 = int(ins.mods.get("offset0", 0)) * unit, int(ins.mods.get("offset1", 0)) * unit
    n = 2 if b64 else 1

    def run(c):
        if c.lanes == 0:
            return
        st = c.st
        if st.shadow is not None:
            offs0, offs1 = _addr_offs(c, vaddr, o0, 4 * n, o1)
            for i in range(n):
                _wr(st, offs0 + 4 * i, 4, _active(c, c.vr(s0 + i)))
            for i in range(n):
                _wr(st, offs1 + 4 * i, 4, _active(c, c.vr(s1 + i)))
            return
        if _native(c, True, vaddr, (o0, o1), n, (s0, s1)):
            return
        (dw0, dw1), _ = _addr_dw(c, vaddr, 4 * n, o0, o1)
        if st.tracker is not None:
            st.tracker.access_dwords(st, [dw0, dw1], n, True)
        lds32 = st.lds.view(U32)
        for dw, src in ((dw0, s0), (dw1, s1)):     # in the order of the two writes
            for i in range(n):
                lds32[dw + i if i else dw] = _active(c, c.vr(src + i))
    return op(run)


def _f(x):
    return x.view(np.float32)


DS_ATOMIC = {
    "add_u32": lambda o, d: o + d, "sub_u32": lambda o, d: o - d, "rsub_u32": lambda o, d: d - o,
    "inc_u32": lambda o, d: np.where(o >= d, U32(0), o + U32(1)),
    "dec_u32": lambda o, d: np.where((o == 0) | (o > d), d, o - U32(1)),
    "min_i32": lambda o, d: np.minimum(o.view(np.int32), d.view(np.int32)).view(U32),
    "max_i32": lambda o, d: np.maximum(o.view(np.int32), d.view(np.int32)).view(U32),
    "min_u32": np.minimum, "max_u32": np.maximum,
    "and_b32": lambda o, d: o & d, "or_b32": lambda o, d: o | d, "xor_b32": lambda o, d: o ^ d,
    "wrxchg_rtn_b32": lambda o, d: d,
    "add_f32": lambda o, d: (_f(o) + _f(d)).astype(np.float32).view(U32),
    # CDNA3 pseudocode: src < tmp ? src : tmp (a plain comparison: NaN or equal keeps memory)
    "min_f32": lambda o, d: np.where(_f(d) < _f(o), d, o).astype(U32),
    "max_f32": lambda o, d: np.where(_f(d) > _f(o), d, o).astype(U32),
}


@register(*[f"ds_{k}" for k in DS_ATOMIC], *[f"ds_{k[:-4]}_rtn_{k[-3:]}" for k in DS_ATOMIC
                                             if not k.startswith("wrxchg")])
def _ds_atomic(ins: Insn) -> Decoded:
    name = ins.base[3:]
    ret = "_rtn_" in name
    key = name if name in DS_ATOMIC else name.replace("_rtn_", "_")
    fn = DS_ATOMIC[key]
    first = 1 if ret else 0
    dst = ins.ops[0].reg if ret else None
    vaddr, src = ins.ops[first].reg, ins.ops[first + 1].reg
    offset = int(ins.mods.get("offset", 0))

    def run(c):
        if c.lanes == 0:
            return
        offs = _addr_offs(c, vaddr, offset, 4)
        st = c.st
        old = _rd(st, offs, 4)
        data = _active(c, c.vr(src))
        res = atomic_apply(old, data, offs, fn)
        if isinstance(res, tuple):
            pre, new = res
            if st.shadow is not None:
                st.shadow.lds_write(offs, 4)
            if st.tracker is not None:
                st.tracker.access(st, offs, 4, True)
            for i in range(offs.size):      # lane order: the last write to an address wins
                st.lds.view(U32)[offs[i] >> 2] = new[i]
        else:
            pre = old
            _wr(st, offs, 4, res)
        if dst is not None:
            c.vw(dst, _scatter(c, pre))
    return op(run)


# -- cross-lane DS ops ---------------------------------------------------------------

@register("ds_bpermute_b32", "ds_permute_b32")
def _ds_permute(ins: Insn) -> Decoded:
    dst, vaddr, src = ins.ops[0].reg, ins.ops[1].reg, ins.ops[2].reg
    offset = int(ins.mods.get("offset", 0))
    backward = ins.base == "ds_bpermute_b32"

    def run(c):
        sel = ((c.vr(vaddr).astype(I64) + offset) >> 2) & 63          # (w, 64)
        data = c.vr(src)
        active = c.exec_mask()
        if backward:
            got = np.take_along_axis(data, sel, axis=1)
            ok = np.take_along_axis(active, sel, axis=1)
            c.vw(dst, np.where(ok, got, U32(0)))
        else:
            out = np.zeros((c.w, 64), U32)
            rows = np.repeat(np.arange(c.w), 64).reshape(c.w, 64)
            m = active
            out[rows[m], sel[m]] = data[m]
            c.vw(dst, out)
    return op(run)


def _swizzle_pattern(ins: Insn) -> np.ndarray:
    """Source lane for each of the 64 lanes (-1: the lane reads 0)."""
    off = ins.mods.get("offset", 0)
    lanes = np.arange(64)
    if isinstance(off, str):
        m = re.match(r"swizzle\((\w+)(?:,(.*))?\)$", off)
        if not m:
            raise ins.fail(f"swizzle offset {off}")
        mode, args = m.group(1), [a.strip() for a in (m.group(2) or "").split(",") if a.strip()]
        if mode == "QUAD_PERM":
            p = [int(a) for a in args]
            return (lanes & ~3) + np.array(p)[lanes & 3]
        if mode == "SWAP":
            return lanes ^ int(args[0])
        if mode == "REVERSE":
            n = int(args[0])
            return (lanes & ~(n - 1)) | ((n - 1) - (lanes & (n - 1)))
        if mode == "BROADCAST":
            n, k = int(args[0]), int(args[1])
            return (lanes & ~(n - 1)) | k
        if mode == "BITMASK_PERM":
            pat = args[0].strip('"')
            and_m = or_m = xor_m = 0
            for i, ch in enumerate(reversed(pat)):
                bit = 1 << i
                if ch == "0":
                    pass
                elif ch == "1":
                    or_m |= bit
                elif ch == "p":
                    and_m |= bit
                elif ch == "i":
                    and_m |= bit
                    xor_m |= bit
            off = and_m | (or_m << 5) | (xor_m << 10)
        else:
            raise ins.fail(f"swizzle mode {mode}")
    off = int(off)
    if off & 0x8000:
        p = [(off >> (2 * i)) & 3 for i in range(4)]
        return (lanes & ~3) + np.array(p)[lanes & 3]
    and_m, or_m, xor_m = off & 31, (off >> 5) & 31, (off >> 10) & 31
    return (lanes & 32) | ((((lanes & 31) & and_m) | or_m) ^ xor_m)


@register("ds_swizzle_b32")
def _ds_swizzle(ins: Insn) -> Decoded:
    dst, src = ins.ops[0].reg, ins.ops[1].reg
    sel = _swizzle_pattern(ins)

    def run(c):
        data = c.vr(src)[:, sel]
        ok = c.exec_mask()[:, sel]
        c.vw(dst, np.where(ok, data, U32(0)))
    return op(run)


@register("ds_nop")
def _ds_nop(ins: Insn) -> Decoded:
    return op(lambda c: None)
