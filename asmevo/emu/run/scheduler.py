"""Running a batch of waves: groups of waves that share a PC execute together.

The group with the lowest PC runs next (so lagging waves catch up and groups
merge where control flow reconverges); it runs straight-line until it
reaches another group's PC, branches apart, waits at a barrier or ends. A
uniform branch whose condition differs between waves splits the group; a
workgroup barrier releases once every live wave of the workgroup has arrived.
"""
from __future__ import annotations

import time

import numpy as np

from asmevo.emu.errors import ControlFault, EmulatorError, InternalError, LaunchTimeout
from asmevo.emu.run.image import Image
from asmevo.emu.machine.state import Ctx, State

_INF = 1 << 62


class Budget:
    """Counts wave-level instructions across batches; raises when exhausted."""

    def __init__(self, max_instructions: int, deadline: float | None):
        self.max = max_instructions
        self.used = 0
        self.lanes = 0
        self.deadline = deadline
        self.steps = 0


def _merge(groups, pc: int, waves: np.ndarray) -> None:
    if isinstance(groups, _SerialGroups):
        groups.add(pc, waves)
        return
    cur = groups.get(pc)
    groups[pc] = waves if cur is None else union(cur, waves)


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d`` of two arrays of wave indices (sorted, unique, the same dtype),
    by a table of the indices instead of a sort."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu" or not a.size or not b.size \
            or min(int(a.min()), int(b.min())) < 0:
        return np.union1d(a, b)
    seen = np.zeros(max(int(a.max()), int(b.max())) + 1, bool)
    seen[a] = True
    seen[b] = True
    return np.flatnonzero(seen).astype(np.result_type(a, b), copy=False)


class _SerialGroups:
    """Groups for the serial schedules, keyed by (slot, pc), the lowest slot first.

    With each wave's slot in its workgroup as the slot: waves of one slot in
    *different* workgroups share no LDS and no barrier, so they may still run in
    lockstep; only the slots of one workgroup are serialized, which is all a race
    between its waves needs. With each wave's workgroup as the slot: workgroups run
    one after another, each to its end (a race between workgroups).
    """

    def __init__(self, slot_of_wave: np.ndarray, reverse: bool = False):
        self._slot = slot_of_wave
        self._groups: dict[tuple[int, int], np.ndarray] = {}
        self._reverse = reverse

    def add(self, pc: int, waves: np.ndarray) -> None:
        slots = self._slot[waves]
        for k in np.unique(slots):
            ws = waves[slots == k]
            key = (int(k), pc)
            cur = self._groups.get(key)
            self._groups[key] = ws if cur is None else union(cur, ws)

    def pop_next(self) -> tuple[int, np.ndarray]:
        key = (max if self._reverse else min)(self._groups,
                                               key=lambda k: (k[0], -k[1]) if self._reverse else k)
        return key[1], self._groups.pop(key)

    def __bool__(self) -> bool:
        return bool(self._groups)


class _Barriers:
    """Workgroup barriers of one batch: per workgroup its live waves and the waves that
    arrived, and the waves waiting (resume pc -> waves)."""

    __slots__ = ("wg", "live", "arrived", "waiting")

    def __init__(self, wg_of_wave: np.ndarray, nwaves: int):
        self.wg = wg_of_wave
        nwg = int(wg_of_wave.max()) + 1 if nwaves else 0
        self.live = np.bincount(wg_of_wave, minlength=nwg).astype(np.int64)
        self.arrived = np.zeros(nwg, np.int64)
        self.waiting: dict[int, np.ndarray] = {}

    def end(self, groups, waves: np.ndarray) -> None:
        """``waves`` ended: their workgroups' barriers may now be complete."""
        np.subtract.at(self.live, self.wg[waves], 1)
        self.release(groups, np.unique(self.wg[waves]))

    def arrive(self, groups, pc: int, waves: np.ndarray) -> None:
        """``waves`` reached the barrier at ``pc``; they resume at ``pc + 1``."""
        np.add.at(self.arrived, self.wg[waves], 1)
        _merge(self.waiting, pc + 1, waves)
        self.release(groups, np.unique(self.wg[waves]))

    def release(self, groups, touched: np.ndarray) -> None:
        """The waiting waves of every workgroup in ``touched`` whose live waves have all
        arrived go back to ``groups``."""
        arrived, live, wg, waiting = self.arrived, self.live, self.wg, self.waiting
        ready = touched[(arrived[touched] == live[touched]) & (arrived[touched] > 0)]
        if ready.size == 0:
            return
        arrived[ready] = 0
        for rpc in list(waiting):
            ws = waiting[rpc]
            sel = np.isin(wg[ws], ready)
            if sel.any():
                _merge(groups, rpc, ws[sel])
                rest = ws[~sel]
                if rest.size:
                    waiting[rpc] = rest
                else:
                    del waiting[rpc]


class _Batch:
    """What running one batch reads and updates: its code, state and launch, the groups
    still to run, its barriers, and the per-instruction counters and budget."""

    __slots__ = ("img", "st", "launch", "kname", "groups", "barriers", "counts", "lanes",
                 "budget", "trace")

    def __init__(self, img: Image, st: State, launch, groups, counts: np.ndarray,
                 lanes: np.ndarray, budget: Budget, trace):
        self.img, self.st, self.launch, self.kname = img, st, launch, launch.kernel_name
        self.groups = groups
        self.barriers = _Barriers(st.wg_of_wave, st.nwaves)
        self.counts, self.lanes, self.budget, self.trace = counts, lanes, budget, trace


def run_batch(img: Image, st: State, launch, entry: int, counts: np.ndarray,
              lanes: np.ndarray, budget: Budget, trace=None, serial: str | None = None) -> None:
    """Run every wave of ``st`` to its end.

    ``serial`` ("forward" or "reverse"): every wave is its own group and the
    lowest- (highest-) numbered runnable wave runs until it blocks at a barrier
    or ends; "workgroups": the batch's workgroups run one at a time, to their end,
    in their dispatch order (their waves in lockstep); see :meth:`Emulator.launch`.
    """
    nw = st.nwaves
    if serial == "workgroups":
        groups = _SerialGroups(st.wg_of_wave)
        groups.add(entry, np.arange(nw))
    elif serial:
        groups = _SerialGroups(st.wave_in_wg, reverse=serial == "reverse")
        groups.add(entry, np.arange(nw))
    else:
        groups = {entry: np.arange(nw)}
    b = _Batch(img, st, launch, groups, counts, lanes, budget, trace)
    while groups:
        if serial:
            pc, waves = groups.pop_next()
            limit = _INF
        else:       # the lowest pc runs, until it reaches the next group's pc
            pc = min(groups)
            waves = groups.pop(pc)
            limit = min(groups) if groups else _INF
        _run_group(b, pc, waves, limit)
    waiting = b.barriers.waiting
    if waiting:
        stuck = sum(len(v) for v in waiting.values())
        raise ControlFault(f"{stuck} waves wait at a barrier that can never complete",
                           kernel=b.kname)


def _run_group(b: _Batch, pc: int, waves: np.ndarray, limit: int) -> None:
    """Run ``waves`` from ``pc`` straight-line until they end, wait at a barrier, part
    ways or reach ``limit``; where they go on is merged back into ``b.groups``."""
    code = b.img.code
    ncode = len(code)
    counts, lanes, budget, trace, kname = b.counts, b.lanes, b.budget, b.trace, b.kname
    c = Ctx(b.st, waves, b.launch)
    w = c.w
    while True:
        if pc >= ncode or pc < 0:
            raise ControlFault(f"execution ran past the end of the code (instruction "
                               f"index {pc})", kernel=kname)
        d = code[pc]
        counts[pc] += w
        lanes[pc] += c.lanes
        budget.used += w
        budget.lanes += c.lanes
        budget.steps += 1
        if budget.used > budget.max:
            raise LaunchTimeout(f"instruction budget of {budget.max} wave-instructions "
                                "exhausted (infinite loop?)", kernel=kname, address=d.address)
        if budget.deadline is not None and (budget.steps & 1023) == 0 \
                and time.monotonic() > budget.deadline:
            raise LaunchTimeout("time limit exceeded", kernel=kname, address=d.address)
        c.address = d.address
        if trace is not None:
            trace(d, c)
        if d.ctl == "op":
            try:
                d.fn(c)
            except EmulatorError:
                raise
            except Exception as exc:       # an emulator bug, never the kernel's fault
                raise InternalError(f"emulating {d.text!r} failed: {type(exc).__name__}: "
                                    f"{exc}", kernel=kname, address=d.address) from exc
            pc += 1
        else:
            pc = _control(b, d, c, pc, waves)
            if pc is None:
                return
        if pc >= limit:
            _merge(b.groups, pc, waves)
            return


def _control(b: _Batch, d, c: Ctx, pc: int, waves: np.ndarray) -> int | None:
    """Execute the control instruction ``d`` at ``pc`` for ``waves``: the pc they all go on
    at, or None when the group stopped (ended, waits at a barrier, or parted ways: the
    parts are in ``b.groups``)."""
    ctl, launch = d.ctl, b.launch
    if ctl == "branch":
        return d.target
    if ctl == "cbranch":
        nxt, taken = _cbranch(d, c, pc)
        if nxt is None:
            _merge(b.groups, d.target, waves[taken])
            _merge(b.groups, pc + 1, waves[~taken])
        return nxt
    if ctl == "end":
        b.barriers.end(b.groups, waves)
        return None
    if ctl == "barrier":
        b.barriers.arrive(b.groups, pc, waves)
        return None
    if ctl == "getpc":
        c.sw64(d.extra["dst"], np.full(c.w, _next_address(d, launch), np.uint64))
        return pc + 1
    if ctl in ("setpc", "swappc"):
        return _jump(b, d, c, waves)
    if ctl == "trap":
        raise EmulatorError("s_trap executed", kernel=b.kname, address=d.address)
    d.fn(c)          # "fault": unsupported or undecodable
    raise EmulatorError(f"cannot execute {d.text!r}", kernel=b.kname, address=d.address)


def _cbranch(d, c: Ctx, pc: int) -> tuple[int | None, np.ndarray | None]:
    """A conditional branch: (the pc every wave goes on at, None), or (None, which waves
    take it) when they part ways."""
    taken = np.asarray(d.cond(c), bool)
    if taken.all():
        return d.target, None
    if not taken.any():
        return pc + 1, None
    return None, taken


def _jump(b: _Batch, d, c: Ctx, waves: np.ndarray) -> int | None:
    """s_setpc / s_swappc: the one pc every wave jumps to, or None when the targets
    differ (then each target's waves are a group of ``b.groups``)."""
    launch, w = b.launch, c.w
    target = np.broadcast_to(d.extra["src"](c), (w,)).astype(np.uint64)
    if d.ctl == "swappc":
        c.sw64(d.extra["dst"], np.full(w, _next_address(d, launch), np.uint64))
    dests = [_pc_of(b.img, launch, int(t), d, b.kname) for t in np.unique(target)]
    if len(dests) == 1:
        return dests[0]
    for t, dst in zip(np.unique(target), dests):
        _merge(b.groups, dst, waves[target == t])
    return None


def _next_address(d, launch) -> int:
    if d.address is None:
        raise ControlFault(f"{d.mnemonic} needs instruction addresses (rebuild the program)",
                           kernel=launch.kernel_name)
    return launch.code_base + d.address + 4


def _pc_of(img: Image, launch, target: int, d, kname) -> int:
    addr = target - launch.code_base
    idx = img.by_address.get(addr)
    if idx is None:
        raise ControlFault(f"{d.mnemonic} to 0x{target:x}, which is not the start of an "
                           "instruction", kernel=kname, address=d.address)
    return idx
