"""Per-wave instruction traces from one emulator launch, captured cheaply.

The emulator runs *groups* of waves that share a PC, so the trace hook sees
one call per group step, not per wave. :class:`TraceRecorder` stores, per
step, the instruction index and the group's mean active lanes per wave, and
opens a *segment* whenever the group changes (a new ``Ctx``); a segment names
its waves (launch-global ids: batches restart their local ids, so each new
batch ``State`` adds the previous batches' wave counts). A wave's trace is the
concatenation of the step ranges of the segments it belongs to; waves that
walked the same segments share one trace object.

Memory instructions also leave their lane addresses (VMEM, LDS, SMEM), which
:meth:`TraceRecorder.summaries` turns into cache lines, sectors and LDS passes per
wave (:mod:`asmevo.timing.memory`).

For ``buffer_load_*`` / ``buffer_store_*`` the lanes recorded are the lanes
that pass the V# range check, not the active ones: an out-of-range buffer lane
reads 0 or drops its write without a memory access (CDNA3 ISA guide, "Buffer
Instructions: range checking"), which is how Triton masks its tails -- so a
masked-off lane must not count as bytes moved.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.memo import Memo
from asmevo.timing.access import vmem_access


class TraceRecorder:
    """The ``trace=`` callback for :meth:`Emulator.launch`.

    ``memory`` (the target's :class:`~asmevo.timing.memory.MemoryParams`): it also
    keeps, per step of a memory instruction, the lane addresses of its waves, read
    before the instruction executes from the register state it reads them from.
    :meth:`summaries` turns them into what the timing model needs, per wave: VMEM
    ``("v", lines, sectors per line)``, LDS ``("l", cycles, conflict-free cycles)``,
    SMEM ``("s", lines)``. With ``eager`` (every traced wave will be simulated: one
    CU's workgroups) that happens at once and no addresses are kept.
    """

    __slots__ = ("pcs", "lanes", "seg_waves", "seg_start", "raw", "done", "unaddressed",
                 "_ctx", "_st", "_base", "_next", "_mp", "_eager", "_fns")

    def __init__(self, memory, *, eager: bool = False) -> None:
        self.pcs: list[int] = []
        self.lanes: list[float] = []           # active lanes per wave at the step
        self.seg_waves: list[np.ndarray] = []  # launch-global wave ids of each segment
        self.seg_start: list[int] = []
        self.raw: dict[int, tuple] = {}        # step -> (segment, raw addresses)
        self.done: dict[int, dict[int, tuple]] = {}   # step -> wave id -> summary (eager)
        self.unaddressed: dict[str, int] = {}  # memory mnemonics the model cannot address
        self._ctx = None
        self._st = None
        self._base = 0
        self._next: int | None = None
        self._mp = memory
        self._eager = eager
        self._fns: dict[int, object] = {}      # instruction index -> its probe

    def next_batch_base(self, first_wave: int) -> None:
        """The next batch's local wave 0 is launch-global wave ``first_wave`` (for
        batches that are not consecutive, e.g. one CU's workgroups)."""
        self._next = first_wave

    def __call__(self, d, c) -> None:
        if c is not self._ctx:
            self._ctx = c
            st = c.st
            if st is not self._st:
                if self._next is not None:
                    self._base, self._next = self._next, None
                elif self._st is not None:
                    self._base += self._st.nwaves
                self._st = st
            self.seg_waves.append(c.waves + self._base if self._base else c.waves)
            self.seg_start.append(len(self.pcs))
        step = len(self.pcs)
        self.pcs.append(d.index)
        fn = self._fns.get(d.index, _UNSEEN)
        if fn is _UNSEEN:
            fn = self._fns[d.index] = _probe_of(d, self._mp)
        if fn is None or not c.lanes:
            self.lanes.append(c.lanes / c.w)
            return
        if fn is False:
            self.unaddressed[d.mnemonic] = self.unaddressed.get(d.mnemonic, 0) + 1
            self.lanes.append(c.lanes / c.w)
            return
        raw, lanes = fn(c)
        seg = len(self.seg_waves) - 1
        if self._eager:
            self.done[step] = dict(zip(self.seg_waves[seg].tolist(),
                                       _summarize(raw, None, self._mp)))
        else:
            self.raw[step] = (seg, raw)
        self.lanes.append((c.lanes if lanes is None else lanes) / c.w)

    def summaries(self, wanted: np.ndarray) -> dict[int, dict[int, tuple]]:
        """step -> {wave id: summary} for the waves ``wanted`` (a bool per launch-global
        wave id) at every recorded memory step."""
        out = dict(self.done)
        for step, (seg, raw) in self.raw.items():
            gw = self.seg_waves[seg]
            sel = wanted[gw]
            if not sel.any():
                continue
            rows = None if sel.all() else np.flatnonzero(sel)
            ids = gw.tolist() if rows is None else gw[rows].tolist()
            out[step] = dict(zip(ids, _summarize(raw, rows, self._mp)))
        return out


_UNSEEN = object()
# (instruction text, memory params) -> probe
_PROBES: Memo[object] = Memo("timing.probes", 100_001)


def _probe_of(d, mp):
    """The probe of ``d``'s text, built once per text (launches of one kernel share them)."""
    key = (d.text, mp)
    fn = _PROBES.get(key, _UNSEEN)
    if fn is _UNSEEN:
        fn = _PROBES.put(key, _probe(d, mp))
    return fn


def _summarize(raw: tuple, rows, mp) -> list[tuple]:
    """Per wave (``rows`` of the raw arrays, None: all) summaries of one memory step."""
    from asmevo.timing.memory import coalesce, lds_passes, scalar_lines

    kind = raw[0]

    def take(x):
        return x if (rows is None or x is None) else x[rows]

    if kind == "v":
        out = [("v",) + x for x in coalesce(take(raw[1]), take(raw[2]), raw[3], mp)]
        if len(raw) > 4 and raw[4]:     # atomics: distinct addresses per wave (contention)
            out = [x + (n,) for x, n in zip(out, distinct_addresses(take(raw[1]),
                                                                    take(raw[2])))]
        return out
    if kind == "l":
        cyc, ideal = lds_passes([take(a) for a in raw[1]], raw[2], take(raw[3]), mp.lds_banks)
        return [("l", a, b) for a, b in zip(cyc, ideal)]
    return [("s", x) for x in scalar_lines(take(raw[1]), raw[2], mp.scalar_line)]


def distinct_addresses(addr: np.ndarray, mask) -> list[int]:
    """Per wave: how many different addresses its active lanes hit."""
    a = np.asarray(addr).astype(np.int64, copy=False).reshape(-1, 64)
    if mask is not None:
        a = np.where(np.broadcast_to(mask, a.shape), a, -1)
    a = np.sort(a, axis=1)
    new = np.ones(a.shape, bool)
    new[:, 1:] = a[:, 1:] != a[:, :-1]
    new &= a >= 0
    return new.sum(axis=1).tolist()


def _copy_mask(c):
    return None if c.mask is None else np.array(c.mask, bool)


def _probe(d, mp):
    """The address probe of instruction ``d``: ctx -> (raw addresses, lanes that access
    memory or None for all active ones); None when ``d`` accesses no memory, False when
    the model cannot follow its addresses. Buffer lanes past the V# range check access
    nothing (CDNA3 ISA, buffer range checking): they are masked out and not counted."""
    m = d.mnemonic
    if not m.startswith(("global_", "flat_", "buffer_", "ds_", "s_load_", "s_buffer_load_")):
        return None
    if m.startswith(("ds_bpermute", "ds_permute", "ds_swizzle", "ds_nop")) or d.ctl != "op":
        return None             # the LDS crossbar without bank accesses / not executable
    try:
        from asmevo.emu.isa.insn import parse
        from asmevo.targets.amdgpu.processors import DEFAULT
        ins = parse(d.text, index=d.index, address=d.address, kernel=None, accum_offset=0,
                    processor=DEFAULT)
        if m.startswith("ds_"):
            return _lds_probe(ins)
        if m.startswith("s_"):
            return _smem_probe(ins)
        return _vmem_probe(ins)
    except (_NotFollowed, ValueError, IndexError, KeyError):
        return False


class _NotFollowed(Exception):
    """An operand form the address probes do not read (the step keeps default costs)."""


def _vmem_probe(ins):
    from asmevo.emu.isa.vmem import (LOADS, STORES, _buffer_addr, _global_addr, _in_range,
                                 buffer_lds_addr)

    base = ins.base
    flat = base.startswith("flat_")
    nbytes = vmem_access(base)[0]       # the model's one table of widths
    if "_load_" in base or "_store_" in base:
        load = "_load_" in base
        key = base.split("_load_" if load else "_store_", 1)[1]
        table = LOADS if load else STORES
        if key not in table:
            raise _NotFollowed(base)
        size, ndw, _ = table[key]
        if base.startswith("buffer_"):
            addr = buffer_lds_addr(ins) if "lds" in ins.mods else _buffer_addr(ins, size, ndw)

            def probe(c):
                a, offset, stride, index, nrec = addr(c)
                ok = _in_range(offset, stride, index, nrec, size)
                if c.mask is not None:
                    ok = ok & c.mask
                return ("v", a.astype(np.int64), ok, nbytes), int(np.count_nonzero(ok))
            return probe
        addr = _global_addr(ins, 1 if load else 0, None if flat else 2)
    elif "_atomic_" in base:
        ret = bool(ins.mods.get("glc") or ins.mods.get("sc0"))
        first = 1 if ret else 0
        addr = _global_addr(ins, first, None if flat else first + 2)
    else:
        raise _NotFollowed(base)

    atomic = "_atomic_" in base

    def probe(c):
        a = np.broadcast_to(addr(c), (c.w, 64))
        mask = _copy_mask(c)
        if flat and ((a >> np.uint64(32)) == np.uint64(0x10000)).any():
            mask = np.zeros((c.w, 64), bool)    # flat to LDS: no global transactions
        return ("v", a.astype(np.int64), mask, nbytes, atomic), None
    return probe


def _lds_probe(ins):
    from asmevo.emu.isa.lds import READS, WRITES

    base = ins.base
    if base.startswith(("ds_read2", "ds_write2")):
        b64 = base.endswith("b64")
        unit = (8 if b64 else 4) * (64 if "st64" in base else 1)
        vaddr = ins.ops[1].reg if base.startswith("ds_read2") else ins.ops[0].reg
        offs = [int(ins.mods.get("offset0", 0)) * unit, int(ins.mods.get("offset1", 0)) * unit]
        ndw = 2 if b64 else 1
    elif base.startswith(("ds_read_", "ds_write_")):
        read = base.startswith("ds_read_")
        key = base[len("ds_read_" if read else "ds_write_"):]
        table = READS if read else WRITES
        if key not in table:
            raise _NotFollowed(base)
        size, ndw, _ = table[key]
        ndw = max(1, size * ndw // 4)
        vaddr = ins.ops[1].reg if read else ins.ops[0].reg
        offs = [int(ins.mods.get("offset", 0))]
    else:                       # LDS atomics: one dword per lane
        first = 1 if "_rtn_" in base else 0
        vaddr = ins.ops[first].reg
        offs = [int(ins.mods.get("offset", 0))]
        ndw = 1

    def probe(c):
        v = c.vr(vaddr).astype(np.int64)
        return ("l", [v + o for o in offs] if len(offs) > 1 else [v + offs[0]], ndw,
                _copy_mask(c)), None
    return probe


def _smem_probe(ins):
    from asmevo.emu.isa.smem import _N, _offset

    n = _N.get(ins.base.rsplit("_", 1)[1])
    if n is None:
        raise _NotFollowed(ins.base)
    buffer = ins.base.startswith("s_buffer")
    breg = ins.ops[1].reg
    off = _offset(ins)
    hi_mask = np.uint64(0xFFFF if buffer else 0xFFFFFFFF)

    def probe(c):
        s = c.st.s
        b = s[breg, c.idx].astype(np.uint64) | ((s[breg + 1, c.idx].astype(np.uint64)
                                                 & hi_mask) << np.uint64(32))
        a = np.broadcast_to(b + (off(c) & np.uint64(0xFFFFFFFC)), (c.w,))
        return ("s", a.astype(np.int64), 4 * n), None
    return probe


@dataclass
class LaunchTraces:
    """The traces of one launch, ready for the timing model."""

    pcs: np.ndarray                 # instruction index per step
    lanes: np.ndarray               # active lanes per wave per step
    seg_waves: list[np.ndarray]
    seg_bounds: np.ndarray          # (nseg + 1,) step offsets
    total_waves: int
    waves_per_wg: int

    @staticmethod
    def from_recorder(rec: TraceRecorder, total_waves: int, waves_per_wg: int) -> "LaunchTraces":
        bounds = np.array(rec.seg_start + [len(rec.pcs)], np.int64)
        return LaunchTraces(np.asarray(rec.pcs, np.int64), np.asarray(rec.lanes, np.float64),
                            rec.seg_waves, bounds, total_waves, waves_per_wg)

    def wave_work(self) -> np.ndarray:
        """Instructions executed per wave (launch-global ids)."""
        work = np.zeros(self.total_waves, np.int64)
        lens = np.diff(self.seg_bounds)
        for waves, n in zip(self.seg_waves, lens):
            work[waves] += n
        return work

    def wave_steps(self, waves: np.ndarray) -> dict[int, list[int]]:
        """wave id -> its trace as a list of step indices (shared between equal paths)."""
        wanted = np.zeros(self.total_waves, bool)
        wanted[waves] = True
        segs: dict[int, list[int]] = {int(w): [] for w in waves}
        for k, ws in enumerate(self.seg_waves):
            sel = ws[wanted[ws]]
            for w in sel.tolist():
                segs[w].append(k)
        shared: dict[tuple[int, ...], list[int]] = {}
        out: dict[int, list[int]] = {}
        b = self.seg_bounds
        for w, ks in segs.items():
            key = tuple(ks)
            steps = shared.get(key)
            if steps is None:
                steps = (np.concatenate([np.arange(b[k], b[k + 1]) for k in ks]).tolist()
                         if ks else [])
                shared[key] = steps
            out[w] = steps
        return out
