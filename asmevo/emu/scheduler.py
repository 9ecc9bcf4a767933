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
from asmevo.emu.image import Image
from asmevo.emu.state import Ctx, State

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
    groups[pc] = waves if cur is None else np.union1d(cur, waves)


class _SerialGroups:
    """Groups for the serial schedules, keyed by (wave slot in its workgroup, pc).

    Waves of one slot in *different* workgroups share no LDS and no barrier, so
    they may still run in lockstep; only the slots of one workgroup are
    serialized, which is all a race between its waves needs.
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
            self._groups[key] = ws if cur is None else np.union1d(cur, ws)

    def pop_next(self) -> tuple[int, np.ndarray]:
        key = (max if self._reverse else min)(self._groups,
                                               key=lambda k: (k[0], -k[1]) if self._reverse else k)
        return key[1], self._groups.pop(key)

    def __bool__(self) -> bool:
        return bool(self._groups)


def run_batch(img: Image, st: State, launch, entry: int, counts: np.ndarray,
              lanes: np.ndarray, budget: Budget, trace=None, serial: str | None = None) -> None:
    """Run every wave of ``st`` to its end.

    ``serial`` ("forward" or "reverse"): every wave is its own group and the
    lowest- (highest-) numbered runnable wave runs until it blocks at a barrier
    or ends; see :meth:`Emulator.launch`.
    """
    code = img.code
    ncode = len(code)
    nw = st.nwaves
    if serial:
        groups = _SerialGroups(st.wave_in_wg, reverse=serial == "reverse")
        groups.add(entry, np.arange(nw))
    else:
        groups = {entry: np.arange(nw)}
    waiting: dict[int, np.ndarray] = {}          # resume pc -> waves at a barrier
    wg = st.wg_of_wave
    nwg = int(wg.max()) + 1 if nw else 0
    live = np.bincount(wg, minlength=nwg).astype(np.int64)
    arrived = np.zeros(nwg, np.int64)
    kname = launch.kernel_name

    def release(touched: np.ndarray) -> None:
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

    while groups:
        if serial:
            pc, waves = groups.pop_next()
            limit = _INF
        else:
            pc = min(groups)
            waves = groups.pop(pc)
            limit = min(groups) if groups else _INF
        c = Ctx(st, waves, launch)
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
            ctl = d.ctl
            if ctl == "op":
                try:
                    d.fn(c)
                except EmulatorError:
                    raise
                except Exception as exc:       # an emulator bug, never the kernel's fault
                    raise InternalError(f"emulating {d.text!r} failed: {type(exc).__name__}: "
                                        f"{exc}", kernel=kname, address=d.address) from exc
                pc += 1
            elif ctl == "branch":
                pc = d.target
            elif ctl == "cbranch":
                taken = np.asarray(d.cond(c), bool)
                if taken.all():
                    pc = d.target
                elif not taken.any():
                    pc += 1
                else:
                    _merge(groups, d.target, waves[taken])
                    _merge(groups, pc + 1, waves[~taken])
                    break
            elif ctl == "end":
                np.subtract.at(live, wg[waves], 1)
                release(np.unique(wg[waves]))
                break
            elif ctl == "barrier":
                np.add.at(arrived, wg[waves], 1)
                _merge(waiting, pc + 1, waves)
                release(np.unique(wg[waves]))
                break
            elif ctl == "getpc":
                nxt = _next_address(d, launch)
                c.sw64(d.extra["dst"], np.full(w, nxt, np.uint64))
                pc += 1
            elif ctl in ("setpc", "swappc"):
                target = np.broadcast_to(d.extra["src"](c), (w,)).astype(np.uint64)
                if ctl == "swappc":
                    c.sw64(d.extra["dst"], np.full(w, _next_address(d, launch), np.uint64))
                dests = [_pc_of(img, launch, int(t), d, kname) for t in np.unique(target)]
                if len(dests) == 1:
                    pc = dests[0]
                else:
                    for t, dst in zip(np.unique(target), dests):
                        _merge(groups, dst, waves[target == t])
                    break
            elif ctl == "trap":
                raise EmulatorError("s_trap executed", kernel=kname, address=d.address)
            else:   # "fault": unsupported or undecodable
                d.fn(c)
                raise EmulatorError(f"cannot execute {d.text!r}", kernel=kname, address=d.address)
            if pc >= limit:
                _merge(groups, pc, waves)
                break
    if waiting:
        stuck = sum(len(v) for v in waiting.values())
        raise ControlFault(f"{stuck} waves wait at a barrier that can never complete",
                           kernel=kname)


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
