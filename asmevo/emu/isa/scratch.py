"""Private (scratch) memory: per-lane stacks and arrays, on both targets.

Layout, as the hardware's swizzled scratch (ROCr's scratch V#: stride 0,
SWIZZLE_ENABLE, ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64, ADD_TID_ENABLE): every
wave of a batch owns a slot of ``64 * P`` bytes in the ``private segment``
allocation, ``P`` the lane's private bytes (the descriptor's
``private_segment_fixed_size`` plus ``[launch] dynamic_stack``, rounded up
to 4). Byte ``o`` of lane ``l`` lives at ``slot + (o // 4) * 256 + 4 * l + o % 4``.

Three ways in:

* buffer instructions on a swizzled resource (gfx90a's private segment
  buffer V# in s[0:3], the wave offset added by the kernel prologue): the ISA's
  swizzled address ``base + soffset + (index_msb * stride + offset_msb * esize)
  * index_stride + index_lsb * esize + offset_lsb``, index = vaddr (idxen) +
  lane id (ADD_TID_ENABLE), offset = vaddr (offen) + inst_offset;
* ``scratch_*`` instructions: the lane's private offset is vaddr + saddr +
  offset; on gfx90a FLAT_SCRATCH must hold the wave's slot base (the prologue
  adds the wave offset to flat_scratch_init), gfx94x has architected flat
  scratch (the hardware's per-wave base);
* flat instructions whose address lies in the private aperture
  (``src_private_base``): the low 32 bits are the lane's private offset.

Every private access is checked per lane: the offset must lie in
``[0, P)`` (a ``fault`` verdict names the lane's address otherwise), a
swizzled address must stay in the issuing lane's column of its own wave's slot,
and an access that crosses a 4-byte element (legal in unaligned mode, its bytes' place in
the swizzled layout not modelled) is refused.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.isa import vmem
from asmevo.emu.isa.insn import BUILDERS, Decoded, Insn, op, register
from asmevo.emu.errors import MemoryFault, UnsupportedInstruction
from asmevo.emu.machine.memory import HEAP_BASE
from asmevo.emu.isa.operands import PRIVATE_APERTURE_HI, raw_reader
from asmevo.emu.machine.state import FLAT_SCRATCH
from asmevo.targets.amdgpu import processors as P

U32, U64, I64 = np.uint32, np.uint64, np.int64
SCRATCH_CAP = 256 << 20          # bytes of private segment one batch may use
V3_SWIZZLE = (1 << 19) | (3 << 21) | (1 << 23)   # ELEMENT_SIZE 4, INDEX_STRIDE 64, ADD_TID


def lane_bytes(kernel, spec) -> int:
    """Private bytes per lane: the descriptor's fixed size plus the spec's dynamic stack."""
    fixed = kernel.descriptor.private_segment_fixed_size
    dyn = int(spec.dynamic_stack)
    return -(-(fixed + dyn) // 4) * 4


def slot_waves(total_waves: int, waves_per_wg: int, lane: int) -> int:
    """Waves that can hold a private slot at once (whole workgroups)."""
    if lane == 0:
        return total_waves
    per = max(1, SCRATCH_CAP // (64 * lane) // waves_per_wg) * waves_per_wg
    return min(total_waves, per)


def resource_words(base: int, size: int) -> list[int]:
    """The private segment buffer V# the dispatch hands the kernel (gfx9 layout)."""
    return [base & 0xFFFFFFFF, ((base >> 32) & 0xFFFF) | (1 << 31), size & 0xFFFFFFFF,
            V3_SWIZZLE | (4 << 15) | (4 << 12)]


# -- address arithmetic --------------------------------------------------------------

def _fault(c, msg: str, addr: int) -> MemoryFault:
    return MemoryFault(msg, kernel=c.kernel, address=c.address, byte_address=addr)


def _priv(c):
    p = c.launch.extra.get("private")
    if p is None or p["region"] is None:
        return None
    return p


def _slot_base(c, p) -> np.ndarray:
    """(w,) emulated address of each wave's slot."""
    local = c.waves - c.launch.wave_base
    return U64(p["region"].base) + local.astype(U64) * U64(64 * p["lane"])


def _lane_ids(c) -> np.ndarray:
    lanes = np.broadcast_to(np.arange(64, dtype=np.int64), (c.w, 64))
    return vmem._active_flat(c, lanes)


def _stack_hint(c) -> str:
    if c.launch.kernel.descriptor.uses_dynamic_stack:
        return " (the kernel uses a dynamic stack: size it with [launch] dynamic_stack)"
    return ""


def heap_offsets(c, offs: np.ndarray, size: int, *, what: str) -> np.ndarray:
    """Heap offsets of per-lane private byte offsets ``offs`` (active lanes, flat)."""
    p = _priv(c)
    lane = p["lane"] if p else 0
    if offs.size == 0:
        return offs.astype(I64)
    outside = (offs < 0) | (offs + size > lane)
    if outside.any():
        o = int(offs[int(np.argmax(outside))])
        raise _fault(c, f"{what}: {size}-byte private access at offset {o} outside the "
                     f"lane's {lane} private bytes{_stack_hint(c)}",
                     (PRIVATE_APERTURE_HI << 32) + (o & 0xFFFFFFFF))
    # a misaligned access inside one 4-byte element is contiguous in the swizzled layout;
    # one that crosses elements is legal on the hardware (unaligned access mode, LLVM's
    # unaligned-scratch-access) but where its bytes land is not modelled: refused
    crosses = (offs % 4) + min(size, 4) > 4
    if crosses.any():
        o = int(offs[int(np.argmax(crosses))])
        raise UnsupportedInstruction(what, c.kernel, c.address,
                                     f"{size}-byte private access at offset {o} crosses a "
                                     "4-byte element of the swizzled scratch layout")
    slot = vmem._active_flat(c, np.broadcast_to(_slot_base(c, p)[:, None], (c.w, 64)))
    lanes = _lane_ids(c)
    o = offs.astype(I64)
    addr = slot.astype(I64) + (o // 4) * 256 + lanes * 4 + (o % 4)
    return addr - HEAP_BASE


def _load(c, offs, size, ndw, what):
    mem = c.launch.mem
    if ndw == 1:
        return [mem.load(heap_offsets(c, offs, size, what=what), size)]
    return [mem.load(heap_offsets(c, offs + 4 * i, 4, what=what), 4) for i in range(ndw)]


def _store(c, offs, vals, size, ndw, what):
    mem = c.launch.mem
    hs = [heap_offsets(c, offs + 4 * i, min(size, 4), what=what) for i in range(ndw)]
    for h, v in zip(hs, vals):      # checked all before writing any
        mem.store(h, min(size, 4), v)


# -- scratch_* ------------------------------------------------------------------------

def _scratch_offsets(ins: Insn, vaddr_i: int, saddr_i: int):
    offset = int(ins.mods.get("offset", 0))
    va, sa = ins.ops[vaddr_i], ins.ops[saddr_i]
    rv = raw_reader(va, 32, True) if va.kind == "v" else None
    rs = raw_reader(sa, 32, True) if sa.kind == "s" else None
    architected = P.processor(ins.processor).architected_scratch

    def offs(c) -> np.ndarray:
        o = np.full((c.w, 64), offset, I64)
        if rv is not None:
            o = o + rv(c).astype(I64)
        if rs is not None:
            o = o + rs(c).astype(I64)
        if not architected:
            _check_flat_scratch(c, ins.mnemonic)
        return vmem._active_flat(c, o)
    return offs


def _check_flat_scratch(c, what: str) -> None:
    p = _priv(c)
    if p is None:
        return
    fs = c.sr64(FLAT_SCRATCH)
    want = _slot_base(c, p)
    if (fs != want).any():
        i = int(np.argmax(fs != want))
        raise _fault(c, f"{what}: FLAT_SCRATCH is 0x{int(fs[i]):x}, not the wave's private "
                     f"segment 0x{int(want[i]):x} (flat_scratch_init + wave offset)", int(fs[i]))


@register(*[f"scratch_load_{k}" for k in vmem.LOADS])
def _scratch_load(ins: Insn) -> Decoded:
    size, ndw, kind = vmem.LOADS[ins.base.split("_load_")[1]]
    if "lds" in ins.mods:
        raise ins.fail("loads into LDS")
    dst = ins.ops[0].reg
    offs = _scratch_offsets(ins, 1, 2)

    def run(c):
        if c.lanes == 0:
            return
        vals = _load(c, offs(c), size, ndw, ins.mnemonic)
        vmem._write_loaded(c, dst, vals, size, kind)
    return op(run)


@register(*[f"scratch_store_{k}" for k in vmem.STORES])
def _scratch_store(ins: Insn) -> Decoded:
    size, ndw, kind = vmem.STORES[ins.base.split("_store_")[1]]
    src = ins.ops[1].reg
    offs = _scratch_offsets(ins, 0, 2)

    def run(c):
        if c.lanes == 0:
            return
        _store(c, offs(c), vmem._store_values(c, src, ndw, size, kind), size, ndw, ins.mnemonic)
    return op(run)


# -- flat instructions in the private aperture ---------------------------------------

def _private_lanes(a: np.ndarray) -> np.ndarray:
    return (a >> U64(32)) == U64(PRIVATE_APERTURE_HI)


def _flat_offsets(c, a, what):
    priv = _private_lanes(a)
    if not priv.all():
        raise MemoryFault(f"{what}: flat access mixes private and other lanes (not modeled)",
                          kernel=c.kernel, address=c.address)
    if not P.processor(c.launch.processor).architected_scratch:
        _check_flat_scratch(c, what)
    return (a & U64(0xFFFFFFFF)).astype(I64)


def _intercept(names: list[str], handler_for) -> None:
    """Wrap :mod:`asmevo.emu.isa.vmem`'s builders of ``names``: ``handler_for(ins)`` gives
    ``handle(c) -> bool``, True when it executed the instruction itself (a private
    access); otherwise vmem's semantics run (global, LDS, linear buffers)."""
    for name in names:
        inner_builder = BUILDERS[name]

        def builder(ins: Insn, inner_builder=inner_builder) -> Decoded:
            inner = inner_builder(ins)
            if inner.ctl != "op":
                return inner
            handle, base_fn = handler_for(ins), inner.fn

            def run(c):
                if not (c.lanes and handle(c)):
                    base_fn(c)
            inner.fn = run
            return inner
        builder.__wrapped__ = inner_builder     # vmem implements it (isa/mnemonics.py)
        BUILDERS[name] = builder


def _parts(ins: Insn):
    """(load?, size, dwords, kind, data register) of a load/store mnemonic."""
    load = "_load_" in ins.base
    table = vmem.LOADS if load else vmem.STORES
    size, ndw, kind = table[ins.base.split("_load_" if load else "_store_")[1]]
    return load, size, ndw, kind, ins.ops[0].reg if load else ins.ops[1].reg


def _flat_handler(ins: Insn):
    """Flat loads/stores whose lanes are in the private aperture."""
    load, size, ndw, k, reg = _parts(ins)
    addr = vmem._global_addr(ins, 1 if load else 0, None)

    def handle(c) -> bool:
        a = vmem._active_flat(c, addr(c))
        if not _private_lanes(a).any():
            return False
        o = _flat_offsets(c, a, ins.mnemonic)
        if load:
            vmem._write_loaded(c, reg, _load(c, o, size, ndw, ins.mnemonic), size, k)
        else:
            _store(c, o, vmem._store_values(c, reg, ndw, size, k), size, ndw, ins.mnemonic)
        return True
    return handle


_intercept([f"flat_load_{k}" for k in vmem.LOADS] + [f"flat_store_{k}" for k in vmem.STORES],
           _flat_handler)


# -- buffer instructions on a swizzled resource ---------------------------------------

_ESIZE = (2, 4, 8, 16)
_ISTRIDE = (8, 16, 32, 64)


def swizzled_address(c, ins: Insn, dword: int):
    """(addr (w,64) u64) of dword ``dword`` of a buffer access on a swizzled V#."""
    vaddr, rsrc, soff, offen, idxen, inst = vmem._buffer_parts(ins)
    s = c.st.s
    d0 = s[rsrc, c.idx].astype(U64)
    d1 = s[rsrc + 1, c.idx].astype(U64)
    d3 = s[rsrc + 3, c.idx].astype(U64)
    base = (d0 | ((d1 & U64(0xFFFF)) << U64(32)))[:, None]
    stride = ((d1 >> U64(16)) & U64(0x3FFF)).astype(I64)[:, None]
    esize = np.array(_ESIZE, I64)[((d3 >> U64(19)) & U64(3)).astype(I64)][:, None]
    istride = np.array(_ISTRIDE, I64)[((d3 >> U64(21)) & U64(3)).astype(I64)][:, None]
    tid = ((d3 >> U64(23)) & U64(1)).astype(I64)[:, None] * np.arange(64, dtype=I64)[None, :]
    rv = raw_reader(vaddr, 32, True) if vaddr.kind == "v" else None
    index = np.zeros((c.w, 64), I64) + tid
    if idxen:
        index = index + rv(c).astype(I64)
    offset = np.full((c.w, 64), inst + 4 * dword, I64)
    if offen:
        rvo = raw_reader(type(vaddr)("v", vaddr.text, vaddr.reg + (1 if idxen else 0)), 32, True)
        # the offset is a 32-bit sum that wraps: the ISA guide's buffer addressing gives
        # VGPR_offset as an unsigned dword; LLVM's SelectMUBUFScratchOffen folds a negative
        # VGPR offset against a positive offset: on gfx9+ because "the overall address
        # computation would compute a valid address", and piglit's hardware test
        # tests/cl/program/execute/amdgcn-mubuf-negative-vaddr.cl expects that element
        offset = (offset + rvo(c).astype(I64)) & I64(0xFFFFFFFF)
    off = ((index // istride) * stride + (offset // esize) * esize) * istride \
        + (index % istride) * esize + (offset % esize)
    return base + soff(c).astype(U64) + off.astype(U64)


def _check_swizzled(c, a: np.ndarray, size: int, what: str, write: bool) -> np.ndarray:
    """Heap offsets of swizzled buffer addresses ``a`` (active lanes, flat); addresses
    in the private segment must stay in the issuing lane's column of its wave's slot."""
    p = _priv(c)
    if p is not None:
        region = p["region"]
        inside = (a >= U64(region.base)) & (a < U64(region.base + region.size))
        if inside.any():
            slot = vmem._active_flat(c, np.broadcast_to(_slot_base(c, p)[:, None], (c.w, 64)))
            rel = a.astype(I64) - slot.astype(I64)
            lanes = _lane_ids(c)
            ok = ~inside | ((rel >= 0) & (rel < 64 * p["lane"]) & (((rel // 4) % 64) == lanes)
                            & ((rel % 4) + size <= 4))
            if not ok.all():
                i = int(np.argmin(ok))
                o = int((rel[i] // 256) * 4 + rel[i] % 4) if rel[i] >= 0 else int(rel[i])
                raise _fault(c, f"{what}: swizzled private access of lane {int(lanes[i])} at "
                             f"0x{int(a[i]):x} leaves its {p['lane']} private bytes (offset "
                             f"{o}){_stack_hint(c)}", int(a[i]))
    return c.launch.mem.check(a, size, write, (c.kernel, c.address))


def _swizzled(c, rsrc: int, what: str) -> bool:
    s = c.st.s
    sw = ((s[rsrc + 1, c.idx] >> U32(31)) | ((s[rsrc + 3, c.idx] >> U32(23)) & U32(1))) != 0
    if sw.any() and not sw.all():
        raise UnsupportedInstruction(what, c.kernel, c.address, "waves executing together "
                                     "use swizzled and linear buffer resources")
    return bool(sw.any())


def _buffer_handler(ins: Insn):
    """Buffer loads/stores on a swizzled resource (the private segment buffer)."""
    if "lds" in ins.mods:
        return _lds_form_handler(vmem.with_vdata_slot(ins))
    load, size, ndw, k, _ = _parts(ins)
    reg, rsrc, what = ins.ops[0].reg, ins.ops[2].reg, ins.mnemonic
    step = min(size, 4)

    def handle(c) -> bool:
        if not _swizzled(c, rsrc, what):
            return False
        mem = c.launch.mem
        addrs = [vmem._active_flat(c, swizzled_address(c, ins, i)) for i in range(ndw)]
        if load:
            vals = [mem.load(_check_swizzled(c, a, step, what, False), step) for a in addrs]
            vmem._write_loaded(c, reg, vals, size, k)
        else:
            vals = vmem._store_values(c, reg, ndw, size, k)
            hs = [_check_swizzled(c, a, step, what, True) for a in addrs]
            for h, v in zip(hs, vals):      # every lane checked before any write
                mem.store(h, step, v)
        return True
    return handle


def _lds_form_handler(ins: Insn):
    """The LDS form (``ins`` with its VDATA slot filled, vmem.with_vdata_slot): loading a
    swizzled (private) resource straight into LDS is refused."""
    rsrc, what = ins.ops[2].reg, ins.mnemonic

    def handle(c) -> bool:
        if _swizzled(c, rsrc, what):
            raise UnsupportedInstruction(what, c.kernel, c.address,
                                         "a load into LDS from a swizzled (private) resource")
        return False
    return handle


_intercept([f"buffer_load_{k}" for k in vmem.LOADS] + [f"buffer_store_{k}" for k in vmem.STORES],
           _buffer_handler)
