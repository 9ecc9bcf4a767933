"""Dispatching a kernel the way the hardware does: memory for its buffers, the
kernarg segment and the AQL dispatch packet, then for each batch of workgroups
the initial SGPRs, VGPRs and EXEC exactly as the kernel descriptor asks.

SGPR order (AMDGPUUsage, "Initial Kernel Execution State"): user SGPRs
(private segment buffer, dispatch ptr, queue ptr, kernarg segment ptr,
dispatch id, flat scratch init, private segment size, then preloaded kernarg
dwords) from s0; system SGPRs from ``user_sgpr_count`` (workgroup id x/y/z,
workgroup info, private segment wave offset). Work-item ids go to v0 packed as
x | y << 10 | z << 20 on gfx90a/gfx94x/gfx950, to v0/v1/v2 before that.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from asmevo.emu.numerics import fpmode
from asmevo.emu.isa import scratch
from asmevo.emu.errors import LaunchError
from asmevo.emu.isa.gfx950 import lds_limit
from asmevo.emu.machine.memory import Allocation, Memory
from asmevo.emu.machine.state import EXEC, FLAT_SCRATCH, State, pack_mask
from asmevo.targets.amdgpu import kernargs
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.codeobject import CodeObject, Kernel
from asmevo.launch.spec import LaunchSpec, np_dtype
from asmevo.memo import cached

PACKED_TID = P.names(lambda p: p.packed_tid)
QUEUE_BYTES = 256
PACKET_BYTES = 64


def mode_register(kd) -> int:
    """The MODE hardware register at wave launch, from COMPUTE_PGM_RSRC1."""
    return (kd.float_round_mode_32 | (kd.float_round_mode_16_64 << 2)
            | (kd.float_denorm_mode_32 << 4) | (kd.float_denorm_mode_16_64 << 6)
            | (kd.enable_dx10_clamp << 8) | (kd.enable_ieee_mode << 9)
            | (kd.fp16_ovfl << 23))


@dataclass
class Launch:
    """Everything about one launch that all batches share."""

    kernel: Kernel
    spec: LaunchSpec
    co: CodeObject
    processor: str
    mem: Memory
    buffers: dict[str, Allocation]
    kernarg: Allocation
    packet: Allocation
    queue: Allocation
    code: Allocation | None
    code_base: int
    lds_bytes: int
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    waves_per_wg: int
    clock: int = 0
    extra: dict = field(default_factory=dict)
    approx_variant: int = 0          # member of the approximate-instruction families
    # index of this launch's first wave in the State it runs in (asmevo.emu.run.batch runs
    # several launches in one State; a wave's private slot is its index in its launch)
    wave_base: int = 0
    # dispatch slot -> workgroup (linear id): the order workgroups start in (None: ascending)
    order: np.ndarray | None = None

    @property
    def kernel_name(self) -> str:
        return self.kernel.name

    def hwreg_value(self, c, reg: int) -> np.ndarray:
        """s_getreg: MODE, HW_ID (deterministic wave/SIMD/CU numbers), LDS_ALLOC, ..."""
        st = c.st
        w = c.w
        if reg == 1:
            return fpmode.wave_modes(c).astype(np.uint64)
        if reg == 4:   # HW_ID: wave id [3:0], simd [5:4], cu [11:8]
            wv = st.wave_in_wg[c.idx].astype(np.uint64)
            return (wv & np.uint64(15)) | (((wv >> np.uint64(4)) & np.uint64(3)) << np.uint64(4))
        if reg == 6:   # LDS_ALLOC: size in 64-dword blocks at [20:12]
            return np.full(w, ((self.lds_bytes + 255) // 256) << 12, np.uint64)
        if reg == 5:   # GPR_ALLOC
            return np.zeros(w, np.uint64)
        return np.zeros(w, np.uint64)


def setup(co: CodeObject, kernel: Kernel, spec: LaunchSpec, inputs: dict, *,
          guard_bytes: int = 0, guard_fill: int = 0, fill: dict | None = None,
          poison_seed: int | None = None, aliases: dict | None = None,
          reserve: dict | None = None) -> Launch:
    """Lay out global memory and fill it: buffers, kernarg segment, dispatch packet.

    The kernarg allocation reaches past the segment (a kernel may load a whole
    dwordx16 at its end); with ``poison_seed`` those bytes hold seeded random
    bits instead of zeros, so a kernel whose result depends on them differs
    from run to run.

    ``aliases`` (buffer -> (other buffer, byte offset >= 0)): the buffer is not
    allocated on its own but starts that many bytes into the other one, which
    grows to hold both (a launch whose pointers overlap, as a caller may make one).
    ``reserve`` (buffer -> bytes): lay out as if the buffer held that many bytes where
    that is more (launches with buffers of other sizes in one pass lay out alike)."""
    processor = co.target.processor
    mem = Memory()
    mem.kernel = kernel.name
    aliases = _checked_aliases(spec, aliases or {}, kernel.name)
    nbytes = {a.name: a.nbytes for a in spec.buffers}
    for name, (base, off) in aliases.items():
        nbytes[base] = max(nbytes[base], off + nbytes[name])
    # an aliased buffer's own allocation stays, unused: the layout is a plain launch's
    buffers = {a.name: mem.add(a.name if a.name not in aliases else f"{a.name} (unused)",
                               a.nbytes, guard=guard_bytes, extend=nbytes[a.name] - a.nbytes,
                               reserve=(reserve or {}).get(a.name, 0))
               for a in spec.buffers}
    segment = kernargs.segment_size(kernel, spec)
    kernarg = mem.add("kernarg segment", max(segment, 256) + 256, readonly=True,
                      contract=segment)
    packet = mem.add("dispatch packet", PACKET_BYTES, readonly=True)
    queue = mem.add("queue", QUEUE_BYTES, readonly=True)
    private, lane, slots = _add_private(mem, kernel, spec)
    loadable = [s for s in co.sections.values() if s.addr and s.name in LOADED_SECTIONS]
    code = None
    if loadable:
        hi = max(s.addr + s.size for s in loadable)
        code = mem.add("code object", hi, readonly=True, align=4096)
    code_base = code.base if code is not None else 0
    mem.finalize()
    for name, (base, off) in aliases.items():
        b = buffers[base]
        buffers[name] = Allocation(name, b.base + off, b.base + off, nbytes[name], 0)
    for s in loadable:
        if s.name != ".bss" and s.data:
            mem.write_bytes(code, s.data, s.addr)
    _fill_buffers(mem, kernel, spec, buffers, inputs, guard_bytes, guard_fill, fill)
    _write_kernargs(mem, kernarg, kernel, spec, inputs, buffers, poison_seed)
    _write_packet(mem, packet, kernel, spec,
                  code_base + kernel.kd_address if code is not None else 0, kernarg.base)
    block, grid = spec.block, spec.grid
    nthreads = block[0] * block[1] * block[2]
    lds = _check_limits(kernel, spec, processor, nthreads)
    return Launch(kernel=kernel, spec=spec, co=co, processor=processor, mem=mem,
                  buffers=buffers, kernarg=kernarg, packet=packet, queue=queue, code=code,
                  code_base=code_base, lds_bytes=lds, block=block, grid=grid,
                  waves_per_wg=-(-nthreads // 64),
                  extra={"private": {"region": private, "lane": lane, "slots": slots}})


# the sections of a code object its loader maps into memory
LOADED_SECTIONS = (".text", ".rodata", ".data", ".bss", ".dynamic", ".hash", ".dynsym",
                   ".dynstr", ".gnu.hash", ".note")


def _add_private(mem: Memory, kernel: Kernel, spec: LaunchSpec
                 ) -> tuple[Allocation | None, int, int]:
    """The private (scratch) segment: (its allocation or None, bytes per lane, wave slots)."""
    nthreads = spec.block[0] * spec.block[1] * spec.block[2]
    wpg = max(1, -(-nthreads // 64))
    lane = scratch.lane_bytes(kernel, spec)
    slots = scratch.slot_waves(int(np.prod(spec.grid)) * wpg, wpg, lane)
    private = mem.add("private segment", slots * 64 * lane) if lane else None
    return private, lane, slots


def _checked_aliases(spec: LaunchSpec, aliases: dict, kernel: str) -> dict:
    """``aliases`` if every entry names two distinct buffers, the second not aliased
    itself, at an offset >= 0."""
    names = {a.name for a in spec.buffers}
    for name, (base, off) in aliases.items():
        if name not in names or base not in names or name == base or base in aliases \
                or not isinstance(off, int) or off < 0:
            raise LaunchError(f"bad alias {name} -> ({base}, {off})", kernel=kernel)
    return aliases


def _fill_order(spec: LaunchSpec, buffers: dict) -> list:
    """Buffers in the order their contents are written: where two overlap (aliases),
    an input's values win over an in/out buffer's, which win over an output's poison."""
    rank = {a.name: (0 if a.output else 1 if a.inout else 2) for a in spec.buffers}
    return sorted(spec.buffers, key=lambda a: (rank[a.name], buffers[a.name].guard > 0))


def _fill_buffers(mem: Memory, kernel: Kernel, spec: LaunchSpec, buffers: dict, inputs: dict,
                  guard_bytes: int, guard_fill: int, fill: dict | None) -> None:
    """Each buffer's first bytes: its ``fill`` pattern, else its input (zeros when absent);
    its guards, if any, hold ``guard_fill``."""
    if guard_bytes:
        for a in spec.buffers:
            if buffers[a.name].guard:
                mem.view(buffers[a.name], with_guard=True)[:] = guard_fill & 0xFF
    for a in _fill_order(spec, buffers):
        al = buffers[a.name]
        val = inputs.get(a.name)
        if fill and a.name in fill:
            pat = fill[a.name]
            raw = bytes([pat & 0xFF]) if isinstance(pat, int) else bytes(pat)
            reps = -(-a.nbytes // len(raw))
            mem.write_bytes(al, (raw * reps)[:a.nbytes])
        elif val is not None:
            arr = np.asarray(val).astype(np_dtype(a.dtype), copy=False).reshape(-1)
            if arr.nbytes > a.nbytes:
                raise LaunchError(f"input {a.name} has {arr.size} elements; the spec allocates "
                                  f"{a.count}", kernel=kernel.name)
            mem.write_bytes(al, arr)


def _write_kernargs(mem: Memory, kernarg: Allocation, kernel: Kernel, spec: LaunchSpec,
                    inputs: dict, buffers: dict, poison_seed: int | None) -> None:
    """The kernarg segment (scalars from ``inputs`` or the spec, buffer pointers); with
    ``poison_seed`` the allocation's bytes past it are seeded garbage."""
    values = {a.name: inputs.get(a.name, a.value) for a in spec.args if a.kind == "scalar"}
    pointers = {name: al.base for name, al in buffers.items()}
    ka = kernargs.pack(kernel, spec, values, pointers)
    mem.write_bytes(kernarg, ka)
    if poison_seed is not None:
        slack = kernarg.size - len(ka)
        rng = np.random.default_rng([poison_seed >> 1, 0x4B41])
        mem.write_bytes(kernarg, garbage(rng, (slack,), np.uint8, poison_seed), len(ka))


def _write_packet(mem: Memory, packet: Allocation, kernel: Kernel, spec: LaunchSpec,
                  kd_address: int, kernarg_base: int) -> None:
    """The AQL kernel dispatch packet (hsa_kernel_dispatch_packet_t) a kernel can read
    through its dispatch pointer."""
    block, grid = spec.block, spec.grid
    hdr = struct.pack("<HHHHHHIIIIIQQQQ", 0, kernargs.grid_dims(spec), block[0], block[1],
                      block[2], 0, grid[0] * block[0], grid[1] * block[1], grid[2] * block[2],
                      kernel.descriptor.private_segment_fixed_size,
                      kernel.descriptor.group_segment_fixed_size + spec.dynamic_lds,
                      kd_address, kernarg_base, 0, 0)
    mem.write_bytes(packet, hdr)


def _check_limits(kernel: Kernel, spec: LaunchSpec, processor: str, nthreads: int) -> int:
    """Refuse a workgroup the hardware cannot launch; returns its LDS bytes."""
    if nthreads > 1024:
        raise LaunchError(f"workgroup of {nthreads} work-items; at most 1024", kernel=kernel.name)
    lds = kernel.descriptor.group_segment_fixed_size + spec.dynamic_lds
    if lds > lds_limit(processor):
        raise LaunchError(f"{lds} bytes of LDS per workgroup; at most {lds_limit(processor)} on "
                          f"{processor}", kernel=kernel.name)
    return lds


def garbage(rng: np.random.Generator, shape, dtype, seed: int) -> np.ndarray:
    """Seeded random bits for state the dispatch leaves undefined. Seeds ``2k`` and
    ``2k + 1`` give bitwise complements of each other, so two runs that use them
    differ in every bit of every undefined register, LDS byte and poisoned byte:
    a result that depends on any of those bits differs between them."""
    bits = rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)
    return ~bits if seed & 1 else bits


GARBAGE_CACHE_BYTES = 16 << 20      # register files up to this size are generated once


def _register_garbage(seed: int, wg0: int, vshape, sshape, ldsshape):
    """The garbage of VGPRs, SGPRs and LDS for a batch starting at workgroup ``wg0``
    (one generator, in that order); the same seed and shapes give the same bits, so a
    small batch's are generated once and copied (verification launches the same
    shapes under the same seeds for every candidate)."""
    nbytes = 4 * (int(np.prod(vshape)) + int(np.prod(sshape))) + int(np.prod(ldsshape))
    if nbytes > GARBAGE_CACHE_BYTES:
        return _make_garbage(seed, wg0, vshape, sshape, ldsshape)
    return _cached_garbage(seed, wg0, tuple(vshape), tuple(sshape), tuple(ldsshape))


def _make_garbage(seed, wg0, vshape, sshape, ldsshape):
    rng = np.random.default_rng([seed >> 1, wg0])
    return (garbage(rng, vshape, np.uint32, seed), garbage(rng, sshape, np.uint32, seed),
            garbage(rng, ldsshape, np.uint8, seed))


@cached("emu.run.dispatch._cached_garbage", 48)
def _cached_garbage(seed, wg0, vshape, sshape, ldsshape):
    out = _make_garbage(seed, wg0, vshape, sshape, ldsshape)
    for a in out:
        a.setflags(write=False)      # copied into every State that uses it, never written
    return out


def initial_state(ln: Launch, wg0: int, wg1: int, nvgprs: int,
                  garbage_seed: int | None = None) -> State:
    """The state of workgroups [wg0, wg1) at their first instruction.

    Registers and LDS the dispatch does not initialise hold whatever an earlier
    wave left there on hardware. With ``garbage_seed`` they hold seeded
    pseudo-random bits instead of zeros (:func:`garbage`), so code that reads an
    uninitialised register gives different results for different seeds
    (verification runs a candidate under two complementary seeds to expose
    exactly that).
    """
    kd = ln.kernel.descriptor
    wpg = ln.waves_per_wg
    nwg = wg1 - wg0
    nw = nwg * wpg
    wg_local = np.repeat(np.arange(nwg), wpg)
    st = State(nw, nvgprs, ln.lds_bytes, wg_local, mode_register(kd))
    if garbage_seed is not None:
        st.v[...], st.s[...], st.lds[...] = _register_garbage(
            garbage_seed, wg0, st.v.shape, st.s.shape, st.lds.shape)
        st.s[FLAT_SCRATCH:FLAT_SCRATCH + 4] = 0   # flat_scratch, xnack_mask: set by hardware
    st.wave_in_wg = np.tile(np.arange(wpg), nwg)
    valid = _workitem_ids(st, ln, nvgprs)
    lo, hi = pack_mask(valid)
    st.s[EXEC], st.s[EXEC + 1] = lo, hi
    st.refresh_exec(slice(None))
    region, pbase, slot = _private_memory(ln, nw, wg0, garbage_seed)
    user_end = _user_sgprs(st.s, ln, region, pbase)
    g = wg0 + wg_local if ln.order is None else ln.order[wg0 + wg_local]
    gx, gy, _ = ln.grid
    wgid = (g % gx, (g // gx) % gy, g // (gx * gy))
    system_start = max(user_end, kd.user_sgpr_count)
    end = _system_sgprs(st.s, system_start, kd, wgid, wpg, slot)
    if P.processor(ln.processor).architected_scratch:
        base = (np.uint64(pbase) + slot)
        st.s[FLAT_SCRATCH] = (base & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        st.s[FLAT_SCRATCH + 1] = (base >> np.uint64(32)).astype(np.uint32)
    if end > 104:
        raise LaunchError(f"initial SGPRs need {end} registers", kernel=ln.kernel.name)
    st.dispatch_sgprs = list(range(user_end)) + list(range(system_start, end))
    return st


def _workitem_ids(st: State, ln: Launch, nvgprs: int) -> np.ndarray:
    """Work-item ids into v0 (packed x | y << 10 | z << 20 where the target packs them,
    else v0/v1/v2, as the descriptor enables); returns which lanes are work-items."""
    kd = ln.kernel.descriptor
    bx, by, bz = ln.block
    t = st.wave_in_wg[:, None] * 64 + np.arange(64)[None, :]
    valid = t < bx * by * bz
    tx, ty, tz = t % bx, (t // bx) % by, t // (bx * by)
    tx, ty, tz = (np.where(valid, a, 0).astype(np.uint32) for a in (tx, ty, tz))
    if ln.processor in PACKED_TID:
        st.v[0] = tx | (ty << np.uint32(10) if kd.enable_vgpr_workitem_id >= 1 else 0) \
            | (tz << np.uint32(20) if kd.enable_vgpr_workitem_id >= 2 else 0)
    else:
        st.v[0] = tx
        if kd.enable_vgpr_workitem_id >= 1 and nvgprs > 1:
            st.v[1] = ty
        if kd.enable_vgpr_workitem_id >= 2 and nvgprs > 2:
            st.v[2] = tz
        st.dispatch_vgprs = list(range(min(nvgprs, 1 + kd.enable_vgpr_workitem_id)))
    return valid


def _private_memory(ln: Launch, nw: int, wg0: int, garbage_seed: int | None):
    """The batch's private memory, which starts undefined (zeros, or garbage with
    ``garbage_seed``): (its region or None, its base address, each wave's byte offset)."""
    priv = ln.extra.get("private", {})
    region = priv.get("region")
    slot = np.arange(nw, dtype=np.uint64) * np.uint64(64 * priv.get("lane", 0))
    pbase = region.base if region is not None else 0
    if region is not None:
        view = ln.mem.view(region)
        view[:] = 0 if garbage_seed is None else garbage(
            np.random.default_rng([garbage_seed >> 1, wg0, 0x5C]), view.shape, np.uint8,
            garbage_seed)
    return region, pbase, slot


def _put64(s: np.ndarray, i: int, val: int) -> int:
    s[i], s[i + 1] = val & 0xFFFFFFFF, val >> 32
    return i + 2


def _user_sgprs(s: np.ndarray, ln: Launch, region: Allocation | None, pbase: int) -> int:
    """The user SGPRs from s0 in AMDGPUUsage's order, as the descriptor enables them;
    returns the first SGPR after them."""
    kd = ln.kernel.descriptor
    i = 0
    if kd.enable_sgpr_private_segment_buffer:
        words = scratch.resource_words(pbase, region.size if region is not None else 0)
        for k in range(4):
            s[i + k] = words[k]
        i += 4
    if kd.enable_sgpr_dispatch_ptr:
        i = _put64(s, i, ln.packet.base)
    if kd.enable_sgpr_queue_ptr:
        i = _put64(s, i, ln.queue.base)
    if kd.enable_sgpr_kernarg_segment_ptr:
        i = _put64(s, i, ln.kernarg.base)
    if kd.enable_sgpr_dispatch_id:
        i = _put64(s, i, 0)
    if kd.enable_sgpr_flat_scratch_init:
        i = _put64(s, i, pbase)
    if kd.enable_sgpr_private_segment_size:
        s[i] = kd.private_segment_fixed_size
        i += 1
    if kd.kernarg_preload_spec_length:
        ka = ln.mem.view(ln.kernarg).view(np.uint32)
        off = kd.kernarg_preload_spec_offset
        for k in range(kd.kernarg_preload_spec_length):
            s[i + k] = ka[off + k] if off + k < ka.size else 0
        i += kd.kernarg_preload_spec_length
    return i


def _system_sgprs(s: np.ndarray, i: int, kd, wgid, wpg: int, slot: np.ndarray) -> int:
    """The system SGPRs from ``i`` (workgroup ids, workgroup info, private segment wave
    offset), as the descriptor enables them; returns the first SGPR after them."""
    for axis, on in enumerate((kd.enable_sgpr_workgroup_id_x, kd.enable_sgpr_workgroup_id_y,
                               kd.enable_sgpr_workgroup_id_z)):
        if on:
            s[i] = np.repeat(wgid[axis], 1).astype(np.uint32)
            i += 1
    if kd.enable_sgpr_workgroup_info:
        s[i] = wpg
        i += 1
    if kd.enable_private_segment:
        s[i] = slot.astype(np.uint32)
        i += 1
    return i
