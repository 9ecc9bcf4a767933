"""The CDNA timing model: modeled cycles of one launch, from the emulator's wave traces.

Without a GPU a search still needs a number that rewards real improvements, so
this is a per-CU *issue* model, not a cycle-accurate simulator:

* The emulator runs the launch once (functional results are not needed here)
  with a :class:`~asmevo.emu.timing_trace.TraceRecorder`: every wave's dynamic
  instruction sequence and active lanes.
* Workgroups go round-robin to CUs (group ``g`` on CU ``g % compute_units``);
  only the busiest CU is simulated. Its workgroups queue onto it as resident
  ones finish, at most ``occupancy`` waves per SIMD (VGPR/AGPR/SGPR/LDS).
* Each SIMD is offered an issue slot every ``slot_cycles``; in a slot it issues
  at most one instruction per port (VALU, SALU/SMEM, VMEM, LDS, branch,
  internal) from different waves, chosen round-robin among resident waves. A
  wave issues in order and at most once per slot, so latency hiding emerges:
  while one wave waits at ``s_waitcnt`` another fills the slot.
* ``s_waitcnt`` blocks on real counter semantics: ``vmcnt`` completes in issue
  order (GFX9), ``lgkmcnt`` in order for LDS but out of order for SMEM.
  MFMA and quarter-rate results interlock on register overlap; ``s_barrier``
  waits for the workgroup's live waves; ``s_nop N`` costs N + 1 cycles.
* Memory (:mod:`asmevo.emu.timing_memory`): from the traced lane addresses, each
  VMEM instruction's cache lines and 64-byte sectors (coalescing), each LDS
  access's bank-conflict passes, each scalar load's lines; in issue order the
  CU's vector L1, L2 share and scalar cache (LRUs) decide hits, capacity misses
  and first touches (HBM within the CU's share of the launch's input bytes), and
  per-CU L2 / MALL / HBM servers, the texture addresser and the LDS are queues.
  So bytes moved, lines touched, reuse and bank conflicts matter.

The loop is event driven: a SIMD with nothing issuable jumps to its next event.
Parameters live in ``params/<target>.toml`` (sources: ``docs/timing_model.md``).
Results are deterministic and cached by (code hash, spec, values hash).
"""
from __future__ import annotations

import hashlib
import math
import tomllib
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from asmevo.emu.errors import EmulatorError
from asmevo.emu.timing_memory import L2, CuMemory, MemoryParams
from asmevo.emu.timing_trace import LaunchTraces, TraceRecorder
from asmevo.files import read_input
from asmevo.targets.amdgpu.analysis.effects import effects, waitcnt_fields

PARAMS_DIR = Path(__file__).with_name("params")
INF = float("inf")


class TimingError(EmulatorError):
    """The timing model cannot model this launch (it does not run, or no parameters)."""

    status = "unsupported"


# --- parameters -------------------------------------------------------------

@dataclass(frozen=True)
class Params:
    target: str
    name: str
    compute_units: int
    clock_hz: float
    simds_per_cu: int
    hbm_bytes_per_cycle: float
    l2_bytes_per_cycle_per_cu: float
    lds_bytes_per_cycle: float
    max_workgroups_per_cu: int
    launch_overhead_cycles: int
    workgroup_dispatch_cycles: int
    issue: dict
    latency: dict
    memory: MemoryParams
    quarter_rate: tuple[str, ...] = ()


_ISSUE_KEYS = ("slot_cycles", "salu", "valu", "valu_trans", "valu_quarter",
               "mfma_cycles_per_pass", "smem", "vmem", "vmem_ta_bytes_per_cycle",
               "vmem_ta_min_cycles", "lds", "lds_min_cycles", "branch", "branch_taken",
               "waitcnt", "barrier", "nop_cycles_per_count", "sleep_cycles_per_count", "other")
_LATENCY_KEYS = ("vmem_l1_hit", "vmem_l2_hit", "vmem_mall_hit", "vmem_hbm", "smem_hit",
                 "smem_miss", "vmem_store", "lds", "mfma_extra", "trans_extra", "barrier")
_MACHINE_KEYS = ("name", "compute_units", "clock_mhz", "simds_per_cu", "hbm_bytes_per_second",
                 "l2_bytes_per_cycle_per_cu", "lds_bytes_per_cycle", "max_workgroups_per_cu",
                 "launch_overhead_cycles", "workgroup_dispatch_cycles")
_MEMORY_KEYS = ("l1_bytes", "l1_line", "l2_bytes_per_cu", "sector",
                "scalar_bytes_per_cu", "scalar_line", "mall", "mall_bytes_per_second",
                "tag_cycles_per_line", "lds_banks", "lds_conflict_cycles")


def _family(processor: str) -> str:
    return "gfx942" if processor in ("gfx940", "gfx941", "gfx942", "gfx9-4-generic") else processor


@lru_cache(maxsize=8)
def load_params(processor: str) -> Params:
    """The parameter table of ``processor`` (gfx940/941 share gfx942's)."""
    fam = _family(processor)
    path = PARAMS_DIR / f"{fam}.toml"
    if not path.exists():
        have = ", ".join(sorted(p.stem for p in PARAMS_DIR.glob("*.toml")))
        raise TimingError(f"no timing-model parameters for {processor}; have: {have}",
                          path=str(path))
    doc = tomllib.loads(path.read_text())
    where = str(path)
    for table, keys in (("machine", _MACHINE_KEYS), ("issue", _ISSUE_KEYS),
                        ("latency", _LATENCY_KEYS), ("memory", _MEMORY_KEYS)):
        missing = [k for k in keys if k not in doc.get(table, {})]
        if missing:
            raise TimingError(f"[{table}] lacks {', '.join(missing)}", path=where)
    m, mem, lat = doc["machine"], doc["memory"], doc["latency"]
    for key in ("l1_line", "sector", "scalar_line"):
        v = mem[key]
        if not (isinstance(v, int) and v >= 4 and v & (v - 1) == 0):
            raise TimingError(f"[memory] {key} = {v!r} is not a power of two >= 4", path=where)
    if mem["l1_line"] < mem["sector"]:
        raise TimingError("[memory] l1_line is smaller than sector", path=where)
    clock = float(m["clock_mhz"]) * 1e6
    issue = {k: doc["issue"][k] for k in _ISSUE_KEYS}
    mp = MemoryParams(
        int(mem["l1_bytes"]), int(mem["l1_line"]), int(mem["l2_bytes_per_cu"]),
        int(mem["sector"]), int(mem["scalar_bytes_per_cu"]),
        int(mem["scalar_line"]), bool(mem["mall"]), float(mem["mall_bytes_per_second"]) / clock,
        float(mem["tag_cycles_per_line"]), int(mem["lds_banks"]),
        float(mem["lds_conflict_cycles"]), float(lat["vmem_l1_hit"]), float(lat["vmem_l2_hit"]),
        float(lat["vmem_mall_hit"]), float(lat["vmem_hbm"]), float(lat["smem_hit"]),
        float(lat["smem_miss"]))
    return Params(fam, m["name"], int(m["compute_units"]), clock, int(m["simds_per_cu"]),
                  float(m["hbm_bytes_per_second"]) / clock,
                  float(m["l2_bytes_per_cycle_per_cu"]), float(m["lds_bytes_per_cycle"]),
                  int(m["max_workgroups_per_cu"]), int(m["launch_overhead_cycles"]),
                  int(m["workgroup_dispatch_cycles"]), issue,
                  {k: lat[k] for k in _LATENCY_KEYS}, mp,
                  tuple(doc["issue"].get("quarter_rate", ())))


# --- static per-instruction records ----------------------------------------

# kinds
(K_SALU, K_VALU, K_MFMA, K_SMEM, K_VMEM, K_LDS, K_BRANCH, K_WAIT, K_NOP, K_BARRIER,
 K_END, K_OTHER) = range(12)
# issue ports (one instruction per port per SIMD slot)
P_VALU, P_SCALAR, P_VMEM, P_LDS, P_BRANCH, P_INTERNAL = 1, 2, 4, 8, 16, 32


class Rec:
    """What the model needs of one instruction (a pure function of its text)."""

    __slots__ = ("kind", "port", "cost", "unit", "pend", "writes", "reads", "width", "store",
                 "vm", "lgkm", "wvm", "wlgkm", "klass", "atomic")

    def __init__(self, kind, port, cost, klass, unit=0, pend=0, writes=0, reads=0, width=0,
                 store=False, vm=False, lgkm=False, wvm=None, wlgkm=None, atomic=False):
        self.kind, self.port, self.cost, self.klass = kind, port, cost, klass
        self.unit, self.pend, self.writes, self.reads = unit, pend, writes, reads
        self.width, self.store, self.vm, self.lgkm = width, store, vm, lgkm
        self.wvm, self.wlgkm, self.atomic = wvm, wlgkm, atomic


def _count_operand(text: str) -> int:
    parts = text.split(None, 1)
    try:
        return int(parts[1].split()[0], 0) if len(parts) > 1 else 0
    except ValueError:
        return 0


_RECORDS: dict[tuple[str, str], Rec] = {}


def instruction_record(text: str, p: Params) -> Rec:
    """The model's view of one instruction line (cached by target and text)."""
    key = (p.target, text)
    r = _RECORDS.get(key)
    if r is None:
        if len(_RECORDS) > 200_000:
            _RECORDS.clear()
        r = _RECORDS[key] = _record(text, p)
    return r


def _record(text: str, p: Params) -> Rec:
    e = effects(text)
    iss, lat = p.issue, p.latency
    k = e.klass
    m = e.mnemonic
    if k == "SALU":
        return Rec(K_SALU, P_SCALAR, iss["salu"], k)
    if k == "MFMA":
        passes = e.passes(p.target) or 16
        busy = passes * iss["mfma_cycles_per_pass"]
        return Rec(K_MFMA, P_VALU, busy, k, unit=busy, pend=busy + lat["mfma_extra"],
                   writes=e.writes, reads=e.reads)
    if k in ("VALU", "VALU_TRANS", "DOT"):
        base = m.split("_e32")[0].split("_e64")[0].split("_sdwa")[0].split("_dpp")[0]
        if k == "VALU_TRANS":
            unit = iss["valu_trans"]
        elif base in p.quarter_rate:
            unit = iss["valu_quarter"]
        else:
            unit = iss["valu"]
        pend = unit + lat["trans_extra"] if unit > iss["valu"] else 0
        return Rec(K_VALU, P_VALU, unit, k, unit=unit, pend=pend, writes=e.writes,
                   reads=e.reads)
    if k == "SMEM":
        return Rec(K_SMEM, P_SCALAR, iss["smem"], k, lgkm=True)
    if k == "VMEM":
        atomic = "_atomic_" in m
        return Rec(K_VMEM, P_VMEM, iss["vmem"], k, width=e.width or 4,
                   store=e.mem_store and not e.mem_load and not atomic, vm=True,
                   lgkm="lgkm" in e.counters, atomic=atomic)
    if k == "LDS":
        width = 0 if not e.spaces else (e.width or 4)
        if m.startswith(("ds_read2", "ds_write2")):
            width = 2 * (4 if "b32" in m else 8)
        return Rec(K_LDS, P_LDS, iss["lds"], k, width=width, lgkm=True)
    if k == "WAITCNT":
        f = waitcnt_fields(text)
        return Rec(K_WAIT, P_INTERNAL, iss["waitcnt"], k, wvm=f.get("vm"), wlgkm=f.get("lgkm"))
    if k == "NOP":
        n = _count_operand(text) if m == "s_nop" else 0
        return Rec(K_NOP, P_INTERNAL, (n + 1) * iss["nop_cycles_per_count"], k)
    if k == "BARRIER":
        return Rec(K_BARRIER, P_INTERNAL, iss["barrier"], k)
    if k == "END":
        return Rec(K_END, P_BRANCH, iss["branch"], k)
    if k == "BRANCH":
        return Rec(K_BRANCH, P_BRANCH, iss["branch"], k, unit=iss["branch_taken"])
    if m == "s_sleep":
        return Rec(K_NOP, P_INTERNAL, max(1, _count_operand(text)) *
                   iss["sleep_cycles_per_count"], k)
    return Rec(K_OTHER, P_BRANCH, iss["other"], k)


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
    __slots__ = ("sid", "waves", "next_t", "rr", "valu_free", "mfma_free", "wakeup")

    def __init__(self, sid):
        self.sid = sid
        self.waves: list[_Wave] = []
        self.next_t = INF
        self.rr = 0
        self.valu_free = 0
        self.mfma_free = 0
        self.wakeup = INF       # earliest release / dispatch since this SIMD last ran


class _Group:
    __slots__ = ("waves", "live", "waiting")

    def __init__(self):
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
        self.ta = start + tcyc
        if r.store:
            done = max(start + tcyc + lat["vmem_store"], self.mem.store(lines, secs, start))
            if done > self.store_done:
                self.store_done = done
        else:
            _, done = self.mem.load(lines, secs, start, start + tcyc, atomic=r.atomic)
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


def simulate_cu(recs: list[Rec], pcs: list[int], lanes: list[float],
                groups: list[list[tuple[int, list[int]]]], p: Params, waves_per_simd: int,
                memory: CuMemory, ncode: int, mem_steps: dict | None = None) -> CuResult:
    """Issue-level simulation of one CU running ``groups`` (workgroups, each a list of
    (wave id, trace as step indices)) in order, its memory through ``memory`` (with the
    trace's per-step address summaries ``mem_steps``); returns its cycles and
    per-instruction stall and issue cycles."""
    iss, lat = p.issue, p.latency
    slot = iss["slot_cycles"]
    nsimd = p.simds_per_cu
    simds = [_Simd(i) for i in range(nsimd)]
    stall = [0.0] * ncode
    issue = [0.0] * ncode
    units = _Units(p, memory, ncode)
    mem_steps = mem_steps or {}
    wpg = max(1, max((len(g) for g in groups), default=1))
    resident_limit = max(1, (waves_per_simd * nsimd) // wpg)
    if wpg > 1:
        # LLVM AMDGPUBaseInfo getMaxWorkGroupsPerCU: the 16-workgroup cap is the barrier
        # limit, and "single-wave workgroups don't consume barrier resources" -- they are
        # limited by waves only.
        resident_limit = min(p.max_workgroups_per_cu, resident_limit)
    queue = deque(range(len(groups)))
    state = {"end": 0.0, "resident": 0, "last_dispatch": -INF}
    barrier_lat = lat["barrier"]
    dispatch_cost = p.workgroup_dispatch_cycles

    def dispatch(t: float) -> None:
        while queue and state["resident"] < resident_limit:
            gi = queue.popleft()
            start = max(t, state["last_dispatch"] + dispatch_cost)
            state["last_dispatch"] = start
            state["resident"] += 1
            g = _Group()
            for wid, steps in groups[gi]:
                s = min(simds, key=lambda x: (len(x.waves), x.sid))
                w = _Wave(steps, g, s, start, wid)
                g.waves.append(w)
                if w.n == 0:
                    continue
                g.live += 1
                s.waves.append(w)
                if start < s.next_t:
                    s.next_t = start
                if start < s.wakeup:
                    s.wakeup = start
            if g.live == 0:
                state["resident"] -= 1

    dispatch(0.0)
    while True:
        s = None
        bt = INF
        for x in simds:
            if x.next_t < bt:
                bt, s = x.next_t, x
        if s is None:
            break
        t = float(math.ceil(bt))
        t += (s.sid - t) % slot
        ws = s.waves
        nw = len(ws)
        used = 0
        nxt = INF
        more = False
        first = -1
        finished: list[_Wave] = []
        for j in range(nw):
            idx = (s.rr + j) % nw
            w = ws[idx]
            r0 = w.ready if w.ready > w.wake else w.wake
            if r0 > t:
                if r0 < nxt:
                    nxt = r0
                continue
            step = w.steps[w.pos]
            pc = pcs[step]
            r = recs[pc]
            kind = r.kind
            block = _waitcnt_until(w, r, t) if kind == K_WAIT else t
            if w.pend and r.reads:      # interlocked MFMA / quarter-rate results
                keep = []
                for mask, ready in w.pend:
                    if ready > t:
                        keep.append((mask, ready))
                        if mask & r.reads and ready > block:
                            block = ready
                w.pend = keep
            if kind == K_VALU:
                if s.valu_free > block:
                    block = s.valu_free
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
            # issue
            used |= port
            if first < 0:
                first = idx
            stall[pc] += t - w.ready
            w.wake = 0
            cost = r.cost
            ready = t + slot
            if kind == K_VALU:
                s.valu_free = t + r.unit
                if r.pend:
                    w.pend.append((r.writes, t + r.pend))
            elif kind == K_MFMA:
                s.mfma_free = t + r.unit
                w.pend.append((r.writes, t + r.pend))
            elif kind == K_VMEM:
                info = mem_steps.get(step)
                cost, done = units.vmem(r, pc, info.get(w.wid) if info else None,
                                        lanes[step], t)
                done = math.ceil(max(done, w.last_vm))
                w.last_vm = done
                w.vm.append(done)
                if r.lgkm:
                    w.lds.append(max(done, w.last_lds))
                    w.last_lds = max(done, w.last_lds)
            elif kind == K_LDS:
                info = mem_steps.get(step)
                cost, done = units.lds_op(r, pc, info.get(w.wid) if info else None,
                                          lanes[step], t)
                done = math.ceil(max(done, w.last_lds))
                w.last_lds = done
                w.lds.append(done)
            elif kind == K_SMEM:
                info = mem_steps.get(step)
                w.smem.append(t + units.smem_latency(info.get(w.wid) if info else None))
            elif kind == K_BRANCH:
                taken = w.pos + 1 < w.n and pcs[w.steps[w.pos + 1]] != pc + 1
                if taken:
                    ready = t + r.unit
            elif kind == K_NOP:
                ready = t + max(slot, cost)
            issue[pc] += cost
            w.pos += 1
            if kind == K_BARRIER:
                g = w.wg
                g.waiting.append((w, pc, t))
                w.ready = INF
                if len(g.waiting) == g.live:
                    _release(g, t + barrier_lat, stall)
                continue
            if kind == K_END or w.pos >= w.n:
                finished.append(w)
                end = t + cost
                if end > state["end"]:
                    state["end"] = end
                continue
            w.ready = ready
            if ready < nxt:
                nxt = ready
        if first >= 0:
            s.rr = first + 1
        for w in finished:
            s.waves.remove(w)
            g = w.wg
            g.live -= 1
            if g.waiting and len(g.waiting) == g.live:
                _release(g, t + barrier_lat, stall)
            if g.live == 0:
                state["resident"] -= 1
                dispatch(t + slot)
        if s.waves:
            s.next_t = t + slot if more else max(t + slot, nxt)
            if s.wakeup < s.next_t:
                s.next_t = s.wakeup
        else:
            s.next_t = INF
        s.wakeup = INF
    total = max(state["end"], units.store_done)
    return CuResult(int(math.ceil(total)), np.array(stall), np.array(issue),
                    sum(len(g) for g in groups), len(groups), units.bytes,
                    np.array(units.lines), np.array(units.conflicts), dict(memory.stats))


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


# --- one launch -------------------------------------------------------------

@dataclass
class TimingResult:
    """Modeled (never measured) time of one launch."""

    cycles: int                         # modeled cycles of the launch
    seconds: float                      # cycles / clock
    stalls: dict[str, np.ndarray]       # function -> per instruction stall cycles (busiest CU)
    issue: dict[str, np.ndarray]        # function -> per instruction issue cycles (busiest CU)
    occupancy: int                      # waves per SIMD
    target: str
    cu_cycles: int = 0                  # the busiest CU alone
    cu_workgroups: int = 0
    workgroups: int = 0
    waves: int = 0
    vmem_bytes: float = 0.0             # whole launch (lanes x width)
    dram_bytes: float = 0.0             # HBM bytes (busiest CU's, scaled to the launch)
    profile: dict = field(default_factory=dict)   # the emulator's FunctionProfile per function
    emulation_seconds: float = 0.0
    model_seconds: float = 0.0
    label: str = "modeled"
    memory: dict = field(default_factory=dict)    # busiest CU: cache hits, misses, bytes
    lines: dict = field(default_factory=dict)     # function -> per instruction L1 lines
    lds_conflicts: dict = field(default_factory=dict)  # function -> per instruction extra


_CACHE: "OrderedDict[tuple, TimingResult]" = OrderedDict()
_CACHE_SIZE = 64


def _values_hash(values: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(values):
        v = values[name]
        h.update(name.encode() + b"\0")
        if isinstance(v, np.ndarray):
            h.update(str(v.dtype).encode() + str(v.shape).encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def _code_bytes(code) -> tuple[bytes | None, object]:
    if isinstance(code, (bytes, bytearray, memoryview)):
        return bytes(code), bytes(code)
    if isinstance(code, (str, Path)):
        data = read_input(code, what="code object")
        return data, data
    data = getattr(code, "data", None)        # a CodeObject
    return (bytes(data) if data is not None else None), code


def model_launch(code_bytes, spec, values: dict, *, sample: bool = True) -> TimingResult:
    """Modeled cycles of launching ``spec`` with ``values`` on K (code object bytes,
    a path, a CodeObject or a recovered Program). Deterministic; cached.

    With ``sample`` (the default) and more workgroups than CUs, only the
    workgroups of CU 0 (``0, ncu, 2 ncu, ...``: under round-robin placement the
    busiest CU) are emulated, so large launches cost what one CU's share costs.
    That assumes workgroups do not communicate through memory (no grid-wide
    atomics or flags); ``sample=False`` emulates the whole launch and simulates
    the CU with the most executed instructions.
    """
    raw, code = _code_bytes(code_bytes)
    key = None
    if raw is not None:
        key = (hashlib.sha256(raw).hexdigest(), repr(spec), _values_hash(values), sample)
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    res = _model(code, spec, values, sample)
    if key is not None:
        _CACHE[key] = res
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return res


_EMULATORS: "OrderedDict[object, object]" = OrderedDict()


def _emulator(code):
    """Decoded emulators, reused across launches of the same code object."""
    from asmevo.emu.launch import Emulator

    key = hashlib.sha256(code).hexdigest() if isinstance(code, bytes) else id(code)
    emu = _EMULATORS.get(key)
    if emu is None or (not isinstance(code, bytes) and emu.program is not code):
        emu = _EMULATORS[key] = Emulator(code)
        while len(_EMULATORS) > 8:
            _EMULATORS.popitem(last=False)
    else:
        _EMULATORS.move_to_end(key)
    return emu


def _run_workgroups(emu, spec, values: dict, wgs: list[int], rec: TraceRecorder):
    """Emulate only workgroups ``wgs`` (one batch each); returns (status, message, profile)."""
    from asmevo.emu.dispatch import initial_state, setup
    from asmevo.emu.launch import (DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE, FunctionProfile,
                                   _vgpr_file_size)
    from asmevo.emu.scheduler import Budget, run_batch

    img = emu.image
    co = emu.program.source
    k = co.kernel(spec.kernel)
    entry = img.entry_index(spec.kernel)
    ln = setup(co, k, spec, values)
    wpg = ln.waves_per_wg
    budget = Budget(max(DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE * len(wgs) * wpg), None)
    counts = np.zeros(len(img.code), np.int64)
    lanes = np.zeros(len(img.code), np.int64)
    nv = _vgpr_file_size(img, k)
    status, message = "ok", "ok"
    try:
        for g in wgs:
            st = initial_state(ln, g, g + 1, nv)
            rec.next_batch_base(g * wpg)
            run_batch(img, st, ln, entry, counts, lanes, budget, rec)
    except EmulatorError as exc:
        status, message = exc.status, str(exc)
    except (FloatingPointError, OverflowError, ZeroDivisionError) as exc:
        status, message = "fault", f"internal arithmetic error: {exc}"
    profile = {name: FunctionProfile(name, counts[sp.start:sp.end].copy(),
                                     lanes[sp.start:sp.end].copy())
               for name, sp in img.functions.items()}
    return status, message, profile


def _model(code, spec, values: dict, sample: bool = True) -> TimingResult:
    import time

    from asmevo.targets.amdgpu.occupancy import occupancy

    emu = _emulator(code)
    img = emu.image
    co = emu.program.source
    kernel = co.kernel(spec.kernel)
    p = load_params(co.target.processor)
    threads = int(np.prod(spec.block))
    wpg = -(-threads // 64)
    nwg = int(np.prod(spec.grid))
    ncu = p.compute_units
    sampled_run = sample and nwg > ncu     # one CU's workgroups: every wave is simulated
    rec = TraceRecorder(p.memory, eager=sampled_run)
    t0 = time.perf_counter()
    emulated = nwg
    if sampled_run:
        sampled = list(range(0, nwg, ncu))
        emulated = len(sampled)
        status, message, profile = _run_workgroups(emu, spec, values, sampled, rec)
    else:
        res = emu.launch(spec, values, trace=rec)
        status, message, profile = res.status, res.message, res.profile
    t1 = time.perf_counter()
    if status != "ok":
        raise TimingError(f"the launch does not run to completion ({status}: "
                          f"{message}), so it cannot be timed", kernel=spec.kernel)
    traces = LaunchTraces.from_recorder(rec, nwg * wpg, wpg)
    occ = occupancy(kernel, co.target, threads, spec.dynamic_lds)
    wps = max(1, occ.waves_per_simd)
    recs = [instruction_record(d.text, p) for d in img.code]
    pcs = traces.pcs.tolist()
    lanes = traces.lanes.tolist()
    # the busiest CU under round-robin placement of workgroups
    work = traces.wave_work().reshape(nwg, wpg).sum(axis=1)
    cu_work = np.bincount(np.arange(nwg) % ncu, weights=work, minlength=min(ncu, nwg))
    cu = int(np.argmax(cu_work))
    wgs = np.arange(cu, nwg, ncu)
    waves = (wgs[:, None] * wpg + np.arange(wpg)[None, :]).reshape(-1)
    steps = traces.wave_steps(waves)
    groups = [[(int(g * wpg + j), steps[int(g * wpg + j)]) for j in range(wpg)]
              for g in wgs.tolist()]
    # requested VMEM bytes of the whole launch (lanes x width; each step per wave)
    widths = np.array([r.width if r.kind == K_VMEM else 0 for r in recs], np.float64)
    step_bytes = widths[traces.pcs] * traces.lanes
    counts = np.repeat(np.array([len(w) for w in traces.seg_waves], np.float64),
                       np.diff(traces.seg_bounds))
    vmem_total = float((step_bytes * counts).sum()) * nwg / emulated
    memory = _cu_memory(p, spec, nwg, len(groups))
    wanted = np.zeros(nwg * wpg, bool)
    wanted[waves] = True
    cu_res = simulate_cu(recs, pcs, lanes, groups, p, wps, memory, len(img.code),
                         rec.summaries(wanted))
    cycles = cu_res.cycles + p.launch_overhead_cycles
    per_fn = {name: (sp.start, sp.end) for name, sp in img.functions.items()}
    stalls = {name: cu_res.stalls[a:b] for name, (a, b) in per_fn.items()}
    issue = {name: cu_res.issue[a:b] for name, (a, b) in per_fn.items()}
    mem = dict(cu_res.memory)
    mem["unaddressed"] = dict(rec.unaddressed)
    dram = (mem["hbm_bytes"]) * nwg / max(1, len(groups))
    t2 = time.perf_counter()
    return TimingResult(cycles=int(cycles), seconds=cycles / p.clock_hz, stalls=stalls,
                        issue=issue, occupancy=wps, target=p.target, cu_cycles=cu_res.cycles,
                        cu_workgroups=len(groups), workgroups=nwg, waves=nwg * wpg,
                        vmem_bytes=vmem_total, dram_bytes=dram, profile=profile,
                        emulation_seconds=t1 - t0, model_seconds=t2 - t1, memory=mem,
                        lines={n: cu_res.lines[a:b] for n, (a, b) in per_fn.items()},
                        lds_conflicts={n: cu_res.lds_conflicts[a:b]
                                       for n, (a, b) in per_fn.items()})


def _cu_memory(p: Params, spec, nwg: int, cu_wgs: int) -> CuMemory:
    """The simulated CU's memory: its share of HBM and MALL bandwidth (the launch's
    CUs share them evenly) and its HBM budget: its share of the bytes the launch reads
    (the non-output buffers), each read from HBM once."""
    active = max(1, min(p.compute_units, nwg))
    inputs = float(sum(a.nbytes for a in spec.buffers if not a.output))
    mp = p.memory
    return CuMemory(mp, l2_bpc=p.l2_bytes_per_cycle_per_cu,
                    hbm_bpc=p.hbm_bytes_per_cycle / active,
                    mall_bpc=(mp.mall_bytes_per_cycle / active) if mp.mall else 1.0,
                    hbm_budget=inputs * cu_wgs / max(1, nwg))
