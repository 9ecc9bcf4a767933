"""The per-CU issue simulation of the timing model (:mod:`asmevo.timing.model`).

Input: one :class:`Rec` per instruction (what the model needs of it), the busiest
CU's workgroups as wave traces (step indices into ``pcs`` / ``lanes``), the
target's :class:`~asmevo.timing.parameters.Params` and the CU's memory
(:class:`~asmevo.timing.memory.CuMemory`). Output: the CU's cycles and
per-instruction stall and issue cycles (:class:`CuResult`).

The loop is event driven and made of named steps:

* :func:`_dispatch` puts queued workgroups on the CU while fewer than the
  resident limit are there, each wave on the SIMD with the fewest waves;
* the SIMD with the earliest next event runs one issue slot (:func:`_slot`):
  round-robin over its waves, each wave that is ready and not blocked
  (``s_waitcnt`` counters: :func:`_waitcnt_until`; MFMA / quarter-rate
  interlocks: :func:`_interlock`; a busy VALU or MFMA pipe) issues
  (:func:`_issue`) if its port is still free in this slot;
* waves that ended leave (:func:`_retire`), which may release a barrier and
  dispatch the next workgroup; the SIMD's next event is set.

All of it is deterministic: the same inputs give the same cycles.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from asmevo.timing.memory import L2, CuMemory
from asmevo.timing.parameters import Params

INF = float("inf")

# kinds
(K_SALU, K_VALU, K_MFMA, K_SMEM, K_VMEM, K_LDS, K_BRANCH, K_WAIT, K_NOP, K_BARRIER,
 K_END, K_OTHER) = range(12)
# issue ports (one instruction per port per SIMD slot)
P_VALU, P_SCALAR, P_VMEM, P_LDS, P_BRANCH, P_INTERNAL = 1, 2, 4, 8, 16, 32


class Rec:
    """What the model needs of one instruction (a pure function of its text)."""

    __slots__ = ("kind", "port", "cost", "unit", "pend", "writes", "reads", "width", "store",
                 "vm", "lgkm", "wvm", "wlgkm", "klass", "atomic", "hold", "pkhold", "packed")

    def __init__(self, kind, port, cost, klass, unit=0, pend=0, writes=0, reads=0, width=0,
                 store=False, vm=False, lgkm=False, wvm=None, wlgkm=None, atomic=False,
                 hold=0, pkhold=0, packed=False):
        self.kind, self.port, self.cost, self.klass = kind, port, cost, klass
        self.unit, self.pend, self.writes, self.reads = unit, pend, writes, reads
        self.width, self.store, self.vm, self.lgkm = width, store, vm, lgkm
        self.wvm, self.wlgkm, self.atomic = wvm, wlgkm, atomic
        self.hold, self.pkhold, self.packed = hold, pkhold, packed   # MFMA co-execution



# --- the per-CU simulation --------------------------------------------------

class _Wave:
    __slots__ = ("steps", "pos", "n", "ready", "wake", "simd", "wg", "vm", "lds", "smem",
                 "pend", "last_vm", "last_lds", "arrived", "wid")

    def __init__(self, steps, wg, simd, t, wid=-1):
        self.steps = steps
        self.pos = 0
        self.n = len(steps)
        self.ready = t
        self.wake = 0
        self.simd = simd
        self.wg = wg
        self.vm = deque()       # completion times, in order
        self.lds = deque()      # completion times, in order
        self.smem = []          # completion times, any order
        self.pend = []          # (register mask, ready time) of MFMA / quarter-rate results
        self.last_vm = 0
        self.last_lds = 0
        self.arrived = 0
        self.wid = wid          # launch-global wave id (keys the trace's memory summaries)


class _Simd:
    __slots__ = ("sid", "waves", "next_t", "rr", "valu_free", "mfma_free", "wakeup",
                 "valu_hold", "pk_hold")

    def __init__(self, sid):
        self.sid = sid
        self.waves: list[_Wave] = []
        self.next_t = INF
        self.rr = 0
        self.valu_free = 0
        self.mfma_free = 0
        self.valu_hold = 0      # plain VALU may issue from here on (the last MFMA's hold)
        self.pk_hold = 0        # packed F32 / DOT VALU likewise
        self.wakeup = INF       # earliest release / dispatch since this SIMD last ran


class _Group:
    __slots__ = ("waves", "live", "waiting", "idx")

    def __init__(self, idx: int = 0):
        self.idx = idx
        self.waves: list[_Wave] = []
        self.live = 0
        self.waiting: list[tuple[_Wave, int, int]] = []


@dataclass
class CuResult:
    cycles: int
    stalls: np.ndarray
    issue: np.ndarray
    waves: int
    workgroups: int
    vmem_bytes: float
    lines: np.ndarray = None            # per instruction: vector-L1 lines its accesses touched
    lds_conflicts: np.ndarray = None    # per instruction: LDS cycles lost to bank conflicts
    memory: dict = field(default_factory=dict)
    wg_end: list = field(default_factory=list)    # per workgroup: when its last wave ended
    wg_start: list = field(default_factory=list)  # per workgroup: when it was dispatched


def _lgkm_target(w: _Wave, n: int, t: float) -> float:
    lds, smem = w.lds, w.smem
    while lds and lds[0] <= t:
        lds.popleft()
    if smem:
        smem[:] = [x for x in smem if x > t]
    total = len(lds) + len(smem)
    if total <= n:
        return t
    if not smem:
        return lds[total - n - 1]
    return sorted(list(lds) + smem)[total - n - 1]


class _Units:
    """The CU's shared memory pipes: texture addresser, LDS, caches and servers."""

    __slots__ = ("ta", "lds", "store_done", "bytes", "mem", "lines", "conflicts", "p")

    def __init__(self, p: Params, mem: CuMemory, ncode: int):
        self.ta = self.lds = self.store_done = self.bytes = 0.0
        self.mem = mem
        self.lines = [0.0] * ncode
        self.conflicts = [0.0] * ncode
        self.p = p

    def vmem(self, r: Rec, pc: int, x, nlanes: float, t: float) -> tuple[float, float]:
        """A VMEM instruction issued at ``t`` with memory summary ``x`` (None: not
        followed): (texture-addresser cycles, completion time)."""
        iss, lat, mp = self.p.issue, self.p.latency, self.mem.mp
        nbytes = r.width * nlanes
        self.bytes += nbytes
        start = t if t > self.ta else self.ta
        if x is None:       # addresses not followed: the bytes as L2 traffic, uncached
            tcyc = max(iss["vmem_ta_min_cycles"], nbytes / iss["vmem_ta_bytes_per_cycle"])
            self.ta = start + tcyc
            lt = lat["vmem_store"] if r.store else self.mem.latency[L2]
            done = max(start + tcyc + lt, self.mem.uncached(nbytes, start))
            if r.store and done > self.store_done:
                self.store_done = done
            return tcyc, done
        lines, secs = x[1], x[2]
        self.lines[pc] += len(lines)
        tcyc = max(iss["vmem_ta_min_cycles"], nbytes / iss["vmem_ta_bytes_per_cycle"],
                   len(lines) * mp.tag_cycles_per_line)
        if r.width < 4 and nbytes and sum(secs) * mp.sector >= 2 * nbytes:
            # sub-dword lanes spread over twice their bytes or more: a request per lane
            tcyc = max(tcyc, nlanes * mp.subdword_lane_cycles)
        self.ta = start + tcyc
        if r.store:
            done = max(start + tcyc + lat["vmem_store"],
                       self.mem.store(lines, secs, start, nbytes))
            if done > self.store_done:
                self.store_done = done
        elif r.atomic:
            distinct = x[3] if len(x) > 3 else nlanes
            done = self.mem.atomic(lines, secs, start, start + tcyc, nlanes, distinct)
            if done > self.store_done:      # the launch ends when its atomics are done
                self.store_done = done
        else:
            _, done = self.mem.load(lines, secs, start, start + tcyc)
        return tcyc, done

    def lds_op(self, r: Rec, pc: int, x, nlanes: float, t: float) -> tuple[float, float]:
        """An LDS instruction: (LDS cycles, completion time). Bank conflicts add passes
        (LDS occupancy) and ``lds_conflict_cycles`` of latency per extra pass."""
        iss, lat, mp = self.p.issue, self.p.latency, self.mem.mp
        if x is None:
            lcyc = max(iss["lds_min_cycles"], r.width * nlanes / self.p.lds_bytes_per_cycle)
            extra = 0
        else:
            lcyc = max(iss["lds_min_cycles"], x[1])
            extra = x[1] - x[2]
            self.conflicts[pc] += extra
        start = t if t > self.lds else self.lds
        self.lds = start + lcyc
        return lcyc, start + lcyc + lat["lds"] + extra * mp.lds_conflict_cycles

    def smem_latency(self, x) -> float:
        return self.mem.mp.smem_miss if x is None else self.mem.scalar(x[1])


@dataclass(slots=True)
class _Cu:
    """The state of one CU's simulation: its inputs, SIMDs and shared units, the
    workgroups still queued, and the counters the result is made of."""

    recs: list[Rec]
    pcs: list[int]
    lanes: list[float]
    groups: list[list[tuple[int, list[int]]]]
    mem_steps: dict
    simds: list[_Simd]
    units: _Units
    stall: list[float]              # per instruction: cycles waves waited to issue it
    issue: list[float]              # per instruction: cycles it occupied its port
    slot: float                     # cycles between a SIMD's issue slots
    barrier_lat: float
    dispatch_cost: float            # cycles between two workgroup dispatches
    resident_limit: int             # workgroups resident at once
    release: list                   # per workgroup: the device's dispatcher reaches it
    queue: deque = field(default_factory=deque)
    resident: int = 0
    last_dispatch: float = -INF
    end: float = 0.0                # when the last wave ended
    wg_end: list = field(default_factory=list)
    wg_start: list = field(default_factory=list)


def resident_limit(wpg: int, p: Params, waves_per_simd: int) -> int:
    """How many workgroups of ``wpg`` waves fit on the CU at once (``waves_per_simd``:
    occupancy)."""
    wpg = max(1, wpg)
    limit = max(1, (waves_per_simd * p.simds_per_cu) // wpg)
    if wpg > 1:
        # LLVM AMDGPUBaseInfo getMaxWorkGroupsPerCU: the 16-workgroup cap is the barrier
        # limit, and "single-wave workgroups don't consume barrier resources" -- they are
        # limited by waves only.
        limit = min(p.max_workgroups_per_cu, limit)
    return limit


def simulate_cu(recs: list[Rec], pcs: list[int], lanes: list[float],
                groups: list[list[tuple[int, list[int]]]], p: Params, waves_per_simd: int,
                memory: CuMemory, ncode: int, mem_steps: dict | None = None,
                release: list[float] | None = None) -> CuResult:
    """Issue-level simulation of one CU running ``groups`` (workgroups, each a list of
    (wave id, trace as step indices)) in order, its memory through ``memory`` (with the
    trace's per-step address summaries ``mem_steps``), workgroup ``i`` dispatched no
    earlier than ``release[i]`` (the device's dispatcher reaching it); returns its cycles,
    per-instruction stall and issue cycles and each workgroup's end."""
    cu = _Cu(recs, pcs, lanes, groups, mem_steps or {}, [_Simd(i) for i in range(p.simds_per_cu)],
             _Units(p, memory, ncode), [0.0] * ncode, [0.0] * ncode, p.issue["slot_cycles"],
             p.latency["barrier"], p.workgroup_dispatch_cycles,
             resident_limit(max((len(g) for g in groups), default=1), p, waves_per_simd),
             list(release) if release is not None else [0.0] * len(groups),
             deque(range(len(groups))), wg_end=[0.0] * len(groups),
             wg_start=[0.0] * len(groups))
    _dispatch(cu, 0.0)
    slot, simds = cu.slot, cu.simds
    while True:
        s = None
        bt = INF
        for x in simds:         # the SIMD with the earliest next event
            if x.next_t < bt:
                bt, s = x.next_t, x
        if s is None:
            break
        t = float(math.ceil(bt))
        t += (s.sid - t) % slot         # SIMD k issues on its own phase of the slot
        _slot(cu, s, t)
    units = cu.units
    total = max(cu.end, memory.drain(units.store_done))
    return CuResult(int(math.ceil(total)), np.array(cu.stall), np.array(cu.issue),
                    sum(len(g) for g in groups), len(groups), units.bytes,
                    np.array(units.lines), np.array(units.conflicts), dict(memory.stats),
                    cu.wg_end, cu.wg_start)


def _dispatch(cu: _Cu, t: float) -> None:
    """Queued workgroups onto the CU from ``t`` on, while fewer than the resident limit
    are there (one every ``dispatch_cost`` cycles); a workgroup of empty waves leaves at once."""
    queue, simds = cu.queue, cu.simds
    while queue and cu.resident < cu.resident_limit:
        gi = queue.popleft()
        start = max(t, cu.last_dispatch + cu.dispatch_cost, cu.release[gi])
        cu.last_dispatch = start
        cu.wg_start[gi] = start
        cu.resident += 1
        g = _Group(gi)
        for wid, steps in cu.groups[gi]:
            _place(simds, g, wid, steps, start)
        if g.live == 0:
            cu.resident -= 1
            cu.wg_end[gi] = start


def _place(simds: list[_Simd], g: _Group, wid: int, steps: list[int], start: float) -> None:
    """Wave ``wid`` of workgroup ``g`` onto the SIMD with the fewest waves, ready at ``start``."""
    s = min(simds, key=lambda x: (len(x.waves), x.sid))
    w = _Wave(steps, g, s, start, wid)
    g.waves.append(w)
    if w.n == 0:
        return
    g.live += 1
    s.waves.append(w)
    if start < s.next_t:
        s.next_t = start
    if start < s.wakeup:
        s.wakeup = start


def _slot(cu: _Cu, s: _Simd, t: float) -> None:
    """One issue slot of SIMD ``s`` at ``t``: its waves in round-robin order, each that is
    ready, unblocked and finds its port free issues one instruction; then the ended
    waves leave and the SIMD's next event is set."""
    pcs, recs = cu.pcs, cu.recs
    ws = s.waves
    nw = len(ws)
    used = 0            # ports taken in this slot
    nxt = INF           # earliest time a wave that did not issue may issue
    more = False        # a wave was ready but its port was taken
    first = -1
    finished: list[_Wave] = []
    rr = s.rr
    for j in range(nw):
        idx = (rr + j) % nw
        w = ws[idx]
        r0 = w.ready if w.ready > w.wake else w.wake
        if r0 > t:
            if r0 < nxt:
                nxt = r0
            continue
        step = w.steps[w.pos]
        pc = pcs[step]
        r = recs[pc]
        kind = r.kind       # blocked by s_waitcnt, an interlock, a busy VALU / MFMA pipe?
        block = _waitcnt_until(w, r, t) if kind == K_WAIT else t
        if w.pend and r.reads:
            block = _interlock(w, r.reads, t, block)
        if kind == K_VALU:
            free = s.valu_free
            hold = s.pk_hold if r.packed else s.valu_hold
            if hold > free:
                free = hold
            if free > block:
                block = free
        elif kind == K_MFMA and s.mfma_free > block:
            block = s.mfma_free
        if block > t:
            w.wake = block
            if block < nxt:
                nxt = block
            continue
        port = r.port
        if used & port:
            more = True
            continue
        used |= port
        if first < 0:
            first = idx
        ready = _issue(cu, s, w, r, step, pc, t, finished)
        if ready < nxt:
            nxt = ready
    if first >= 0:
        s.rr = first + 1
    if finished:
        _retire(cu, s, finished, t)
    if s.waves:
        s.next_t = t + cu.slot if more else max(t + cu.slot, nxt)
        if s.wakeup < s.next_t:
            s.next_t = s.wakeup
    else:
        s.next_t = INF
    s.wakeup = INF


def _interlock(w: _Wave, reads: int, t: float, block: float) -> float:
    """``block``, or later if ``reads`` overlaps a pending result of ``w``; results ready by
    ``t`` are dropped."""
    keep = []
    for mask, ready in w.pend:
        if ready > t:
            keep.append((mask, ready))
            if mask & reads and ready > block:
                block = ready
    w.pend = keep
    return block


def _issue(cu: _Cu, s: _Simd, w: _Wave, r: Rec, step: int, pc: int, t: float,
           finished: list[_Wave]) -> float:
    """``w`` issues ``r`` (trace step ``step``, instruction ``pc``) at ``t``: its stall and
    issue cycles, the pipe or memory unit it occupies; returns when ``w`` may issue
    next (INF when it now waits at a barrier, or ended: then it is in ``finished``)."""
    cu.stall[pc] += t - w.ready
    w.wake = 0
    kind = r.kind
    cost = r.cost
    slot = cu.slot
    ready = t + slot
    if kind == K_VALU:
        s.valu_free = t + r.unit
        if r.pend:
            w.pend.append((r.writes, t + r.pend))
    elif kind == K_MFMA:
        s.mfma_free = t + r.unit
        s.valu_hold, s.pk_hold = t + r.hold, t + r.pkhold
        w.pend.append((r.writes, t + r.pend))
    elif kind == K_VMEM:
        cost = _issue_vmem(cu, w, r, step, pc, t)
    elif kind == K_LDS:
        cost = _issue_lds(cu, w, r, step, pc, t)
    elif kind == K_SMEM:
        info = cu.mem_steps.get(step)
        w.smem.append(t + cu.units.smem_latency(info.get(w.wid) if info else None))
    elif kind == K_BRANCH:
        if w.pos + 1 < w.n and cu.pcs[w.steps[w.pos + 1]] != pc + 1:    # taken
            ready = t + r.unit
    elif kind == K_NOP:
        ready = t + max(slot, cost)
    cu.issue[pc] += cost
    w.pos += 1
    if kind == K_BARRIER:
        _arrive(cu, w, pc, t)
        return INF
    if kind == K_END or w.pos >= w.n:
        finished.append(w)
        end = t + cost
        if end > cu.end:
            cu.end = end
        return INF
    w.ready = ready
    return ready


def _issue_vmem(cu: _Cu, w: _Wave, r: Rec, step: int, pc: int, t: float) -> float:
    """A VMEM instruction of ``w`` at ``t`` through the CU's texture addresser and
    caches; its completion onto ``vmcnt`` (and ``lgkmcnt`` for flat); returns its cost."""
    info = cu.mem_steps.get(step)
    cost, done = cu.units.vmem(r, pc, info.get(w.wid) if info else None, cu.lanes[step], t)
    done = math.ceil(max(done, w.last_vm))
    w.last_vm = done
    w.vm.append(done)
    if r.lgkm:
        w.lds.append(max(done, w.last_lds))
        w.last_lds = max(done, w.last_lds)
    return cost


def _issue_lds(cu: _Cu, w: _Wave, r: Rec, step: int, pc: int, t: float) -> float:
    """An LDS instruction of ``w`` at ``t`` through the CU's LDS (bank conflicts); its
    completion onto ``lgkmcnt``, in order; returns its cost."""
    info = cu.mem_steps.get(step)
    cost, done = cu.units.lds_op(r, pc, info.get(w.wid) if info else None, cu.lanes[step], t)
    done = math.ceil(max(done, w.last_lds))
    w.last_lds = done
    w.lds.append(done)
    return cost


def _arrive(cu: _Cu, w: _Wave, pc: int, t: float) -> None:
    """``w`` reached the barrier at ``pc`` at ``t``; the last live wave releases them all."""
    g = w.wg
    g.waiting.append((w, pc, t))
    w.ready = INF
    if len(g.waiting) == g.live:
        _release(g, t + cu.barrier_lat, cu.stall)


def _retire(cu: _Cu, s: _Simd, finished: list[_Wave], t: float) -> None:
    """The waves of ``s`` that ended in the slot at ``t`` leave: a barrier their workgroup
    waits at may now release, and an emptied workgroup makes room for the next."""
    for w in finished:
        s.waves.remove(w)
        g = w.wg
        g.live -= 1
        if g.waiting and len(g.waiting) == g.live:
            _release(g, t + cu.barrier_lat, cu.stall)
        if g.live == 0:
            cu.resident -= 1
            cu.wg_end[g.idx] = t
            _dispatch(cu, t + cu.slot)


def _waitcnt_until(w: _Wave, r: Rec, t: float) -> float:
    """When ``s_waitcnt`` ``r`` lets ``w`` go on: vmcnt completes in issue order, lgkmcnt
    in order for LDS and out of order for SMEM."""
    block = t
    if r.wvm is not None:
        q = w.vm
        while q and q[0] <= t:
            q.popleft()
        if len(q) > r.wvm:
            block = max(block, q[len(q) - r.wvm - 1])
    if r.wlgkm is not None:
        block = max(block, _lgkm_target(w, r.wlgkm, t))
    return block



def _release(g: _Group, when: float, stall: list[float]) -> None:
    """The waves waiting at ``g``'s barrier go on at ``when``; their wait counts as stall."""
    for w, pc, arrived in g.waiting:
        stall[pc] += when - arrived
        w.ready = when
        w.wake = 0
        x = w.simd
        if when < x.next_t:
            x.next_t = when
        if when < x.wakeup:
            x.wakeup = when
    g.waiting = []

