"""The CDNA timing model: modeled cycles of one launch, from the emulator's wave traces.

Without a GPU a search still needs a number that rewards real improvements, so
this is a per-CU *issue* model, not a cycle-accurate simulator:

* The emulator runs the launch once (functional results are not needed here)
  with a :class:`~asmevo.timing.trace.TraceRecorder`: every wave's dynamic
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
* Memory (:mod:`asmevo.timing.memory`): from the traced lane addresses, each
  VMEM instruction's cache lines and 64-byte sectors (coalescing), each LDS
  access's bank-conflict passes, each scalar load's lines; in issue order the
  CU's vector L1, L2 share and scalar cache (LRUs) decide hits, capacity misses
  and first touches (HBM within the CU's share of the launch's input bytes), and
  per-CU L2 / MALL / HBM servers, the texture addresser and the LDS are queues.
  So bytes moved, lines touched, reuse and bank conflicts matter.

The loop is event driven: a SIMD with nothing issuable jumps to its next event
(:mod:`asmevo.timing.cu`, in named steps). Parameters live in
``params/<target>.toml`` (:mod:`asmevo.timing.parameters`; sources:
``docs/timing_model.md``).
Results are deterministic and cached by (code hash, spec, values hash).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asmevo.timing.cu import (K_BARRIER, K_BRANCH, K_END, K_LDS, K_MFMA, K_NOP, K_OTHER,
                                  K_SALU, K_SMEM, K_VALU, K_VMEM, K_WAIT, P_BRANCH, P_INTERNAL,
                                  P_LDS, P_SCALAR, P_VALU, P_VMEM, Rec, resident_limit,
                                  simulate_cu)
from asmevo.emu.isa.fatomic import lane_order_for_timing
from asmevo.memo import Memo
from asmevo.timing.access import ATOMIC, WRITE, vmem_access
from asmevo.timing.memory import CuMemory
from asmevo.timing.parameters import Params, TimingError, load_params
from asmevo.timing.sample import run_workgroups, sampled_workgroups
from asmevo.timing.trace import LaunchTraces, TraceRecorder
from asmevo.files import read_input
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.codeobject import CodeObject
from asmevo.targets.amdgpu.analysis.effects import effects, waitcnt_fields


# --- static per-instruction records ----------------------------------------

def _count_operand(text: str) -> int:
    parts = text.split(None, 1)
    try:
        return int(parts[1].split()[0], 0) if len(parts) > 1 else 0
    except ValueError:
        return 0


_RECORDS: Memo[Rec] = Memo("timing.records", 200_001)


def instruction_record(text: str, p: Params) -> Rec:
    """The model's view of one instruction line (cached by target and text)."""
    key = (p.target, text)
    r = _RECORDS.get(key)
    if r is None:
        r = _RECORDS.put(key, _record(text, p))
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
        hold, pkhold = _coexec(e, text, passes, p)
        return Rec(K_MFMA, P_VALU, busy, k, unit=busy, pend=busy + lat["mfma_extra"],
                   writes=e.writes, reads=e.reads, hold=hold, pkhold=pkhold)
    if k in ("VALU", "VALU_TRANS", "DOT"):
        base = m.split("_e32")[0].split("_e64")[0].split("_sdwa")[0].split("_dpp")[0]
        packed = k == "DOT" or base in _PK_F32 or base.startswith("v_dot")
        if k == "VALU_TRANS":
            unit = iss["valu_trans"]
        elif base in p.quarter_rate:
            unit = iss["valu_quarter"]
        else:
            unit = iss["valu"]
        pend = unit + lat["trans_extra"] if unit > iss["valu"] else 0
        return Rec(K_VALU, P_VALU, unit, k, unit=unit, pend=pend, writes=e.writes,
                   reads=e.reads, packed=packed)
    if k == "SMEM":
        return Rec(K_SMEM, P_SCALAR, iss["smem"], k, lgkm=True)
    if k == "VMEM":
        width, direction = vmem_access(m)       # LDS-DMA loads are READs
        return Rec(K_VMEM, P_VMEM, iss["vmem"], k, width=width, store=direction == WRITE,
                   vm=True, lgkm="lgkm" in e.counters, atomic=direction == ATOMIC)
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



_PK_F32 = ("v_pk_add_f32", "v_pk_fma_f32", "v_pk_mul_f32", "v_pk_mov_b32")


def _source_bytes(text: str) -> int:
    """The widest of an MFMA's A and B sources (its 2nd and 3rd operands), in bytes."""
    import re

    ops = [o.strip() for o in text.split(None, 1)[1].split(",")] if " " in text else []
    width = 4
    for op in ops[1:3]:
        r = re.match(r"[va]\[(\d+):(\d+)\]", op)
        if r:
            width = max(width, 4 * (int(r.group(2)) - int(r.group(1)) + 1))
    return width


def _coexec(e, text: str, passes: int, p: Params) -> tuple[int, int]:
    """When VALU work may issue after an MFMA, in cycles from its issue: (plain VALU,
    packed-F32 and DOT VALU). LLVM's rules fitted to thread traces on MI308X (gfx942) and
    MI350X (llvm-project PR 233721, getVALUIssueCycle / getPackedVALUIssueCycle): in
    4-clock slots, an XDL holds plain VALU until 1 + (widest A/B source bytes) / 16 and
    packed F32 / DOT until passes + 2 (+1 with a 16-byte A source); SGEMM and DGEMM hold
    every VALU until passes + 2. CDNA2 (gfx90a) is left as it was: no hold."""
    if not P.processor(p.target).mfma_valu_hold:
        return 0, 0
    slot = p.issue["slot_cycles"]
    if not e.xdl(p.target):
        return (passes + 2) * slot, (passes + 2) * slot
    src = _source_bytes(text)
    return (1 + src // 16) * slot, (passes + 2 + (src >= 16)) * slot


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
    cu_cycles: int = 0                  # the busiest CU alone (extrapolated when sampled)
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
    device: str = ""                    # the device modeled (its CU count, clock, HBM)
    overhead_cycles: int = 0            # launch overhead (in ``cycles``)
    simulated_workgroups: int = 0       # of ``cu_workgroups``; fewer: steady state extrapolated
    steady: bool | None = None          # sampled fewer: was the rate of the last rounds steady?
    params: str = ""                    # the parameter set (ensemble member) that gave it


@dataclass
class LaunchTrace:
    """What one emulator pass gives the model, whatever its parameters: the simulated
    CU's workgroups (wave traces, memory summaries) and the launch's size. The device
    fixes which CU is simulated, so it is part of the trace."""

    target: str
    device: str
    texts: list                         # instruction text per index of the image
    per_fn: dict                        # function -> (start, end) in the image
    pcs: list
    lanes: list
    groups: list                        # simulated workgroups: [(wave id, steps), ...]
    global_ids: list                    # launch-global index of each simulated workgroup
    mem_steps: dict
    profile: dict
    nwg: int
    wpg: int
    ncu: int
    cu_wgs: int                         # workgroups of the simulated CU in the whole launch
    occupancy: int
    inputs_bytes: float
    vmem_total: float
    unaddressed: dict
    emulation_seconds: float


_CACHE_SIZE = 64
_CACHE: Memo[TimingResult] = Memo("timing.results", _CACHE_SIZE, evict="lru")
_TRACE_CACHE_SIZE = 4
_TRACES: Memo[LaunchTrace] = Memo("timing.traces", _TRACE_CACHE_SIZE, evict="lru")
ROUNDS = 2          # resident rounds simulated before a steady state may be extrapolated
STEADY_TOLERANCE = 0.1


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
    if isinstance(code, CodeObject):
        return bytes(code.data), code
    return None, code                           # a recovered Program


def model_launch(code_bytes, spec, values: dict, *, sample: bool = True,
                 device: str | None = None, params: Params | None = None) -> TimingResult:
    """Modeled cycles of launching ``spec`` with ``values`` on K (code object bytes,
    a path, a CodeObject or a recovered Program) on ``device`` (one of the target's
    parameter table's devices; None: its default) under ``params`` (None: the table's;
    else a variant of it, e.g. an :func:`~asmevo.timing.parameters.ensemble` member, named
    by its ``tag``). Deterministic; cached.

    With ``sample`` (the default) and more workgroups than CUs, only the workgroups of
    the busiest CU are emulated, so large launches cost what one CU's share costs; and
    where that CU runs more than ``ROUNDS`` rounds of resident workgroups, only those
    rounds are emulated and simulated, and the rest extrapolated at the rate of the last
    round when its workgroups took as long as the round before's (``steady``), and no sooner
    than the CU's memory servers can serve the rest's bytes (a backlog that grows over more
    rounds than were simulated); when they did not, twice as many rounds are tried, up to
    all of them. That assumes workgroups do not
    communicate through memory (no grid-wide atomics or flags); ``sample=False``
    emulates the whole launch and simulates the CU with the most executed instructions.
    """
    raw, code = _code_bytes(code_bytes)
    tag = params.tag if params is not None else ""
    key = None
    if raw is not None:
        key = _key(raw, spec, values, sample, device, tag)
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    src = raw if raw is not None else code                  # bytes: one decode
    rounds = ROUNDS if sample else None
    while True:
        trace = _trace(src, raw, spec, values, sample, device, rounds)
        p = params if params is not None else load_params(trace.target, device)
        res = simulate_launch(trace, p)
        if res.steady is not False or rounds is None:
            break
        rounds *= 2
    if key is not None:
        _store(key, res)
    return res


def _key(raw: bytes, spec, values: dict, sample: bool, device: str | None = None,
         tag: str = "") -> tuple:
    return (hashlib.sha256(raw).hexdigest(), repr(spec), _values_hash(values), sample,
            device or "", tag)


def _store(key: tuple, res: TimingResult) -> None:
    _CACHE.put(key, res)


def remember(code: bytes, spec, values: dict, res: TimingResult, *, sample: bool = True,
             device: str | None = None) -> None:
    """Keep ``res`` as :func:`model_launch`'s result for these arguments: ``res`` is what
    model_launch returned for them in another process (a worker where the candidate's
    decoded program was warm), so a later call here returns it instead of emulating
    and modeling the launch again (the model is deterministic)."""
    _store(_key(bytes(code), spec, values, sample, device, res.params), res)


def _trace(src, raw, spec, values, sample, device, rounds) -> LaunchTrace:
    key = None
    if raw is not None:
        key = _key(raw, spec, values, sample, device, str(rounds))
        hit = _TRACES.get(key)
        if hit is not None:
            return hit
    tr = trace_launch(src, spec, values, sample=sample, device=device, rounds=rounds)
    if key is not None:
        _TRACES.put(key, tr)
    return tr


_EMULATORS: Memo[object] = Memo("timing.emulators", 8, evict="lru")   # by id(Program)


def _emulator(code):
    """Decoded emulators, reused across launches of the same code object: for bytes,
    the one :func:`asmevo.emu.run.launch.emulator_for` keeps (the differential's); for a
    Program (a CodeObject comes as its bytes), one per object."""
    from asmevo.emu.run.launch import Emulator, emulator_for

    if isinstance(code, bytes):
        return emulator_for(code)
    emu = _EMULATORS.get(id(code))
    if emu is None or emu.program is not code:
        emu = _EMULATORS.put(id(code), Emulator(code))
    return emu


def _sampled_cu(emu, spec, values, nwg: int, ncu: int) -> int:
    """The CU whose workgroups are emulated: the busiest by count (:func:`busiest_cu`),
    unless CU 0's first workgroup executes more than that CU's first -- work need not be
    uniform (a fused-MoE launch's blocks past its valid ones exit at once, and they come
    last in the grid)."""
    cu = busiest_cu(nwg, ncu)
    if cu == 0 or _probe_work(emu, spec, values, 0) <= _probe_work(emu, spec, values, cu):
        return cu
    return 0


def busiest_cu(nwg: int, ncu: int) -> int:
    """Under round-robin placement the CUs below ``nwg % ncu`` get one workgroup more;
    of the busiest, the last is the one the device's dispatcher reaches last."""
    r = nwg % ncu
    return (r or min(ncu, nwg)) - 1


SPREAD_WORKGROUPS = 8  # a launch of at most one workgroup per CU: those emulated, spread out
SPREAD_BUDGET = 2_000_000   # ... when running all of them would take more wave-instructions


def _probe_work(emu, spec, values, wg: int = 0) -> int:
    """Wave-instructions workgroup ``wg`` executes (what one workgroup of the launch costs)."""
    with lane_order_for_timing():
        status, _, profile = run_workgroups(emu, spec, values, [wg])
    if status != "ok":
        return 0        # the full launch then reports why it does not run
    return int(sum(int(f.counts.sum()) for f in profile.values()))


def trace_launch(code, spec, values: dict, *, sample: bool = True, device: str | None = None,
                 rounds: int | None = None) -> LaunchTrace:
    """Emulate the launch with the trace recorder and keep the simulated CU's workgroups:
    with ``sample``, the busiest CU's workgroups when the grid has more workgroups than
    the device has CUs (of them the first ``rounds`` rounds of resident workgroups, when
    given); with one workgroup per CU at most, where running them all would cost more than
    ``SPREAD_BUDGET`` wave-instructions (judged by workgroup 0), ``SPREAD_WORKGROUPS``
    workgroups spread over the grid and of them the one that executes the most (it stands
    for the last one dispatched); else, and without ``sample``, the whole launch and the
    CU with the most executed instructions. :class:`LaunchTrace`."""
    import time

    from asmevo.targets.amdgpu.occupancy import occupancy

    emu = _emulator(code)
    img, co = emu.image, emu.program.source
    p = load_params(co.target.processor, device)
    threads = int(np.prod(spec.block))
    wpg = -(-threads // 64)
    nwg, ncu = int(np.prod(spec.grid)), p.compute_units
    occ = occupancy(co.kernel(spec.kernel), co.target, threads, spec.dynamic_lds)
    wps = max(1, occ.waves_per_simd)
    limit = rounds * resident_limit(wpg, p, wps) if rounds is not None else None
    mode = "cu" if sample and nwg > ncu else (
        "spread" if sample and nwg > SPREAD_WORKGROUPS and
        _probe_work(emu, spec, values) * nwg > SPREAD_BUDGET else "all")
    rec = TraceRecorder(p.memory, eager=mode == "cu")
    t0 = time.perf_counter()
    tried = _emulate(emu, spec, values, rec, mode, nwg, ncu, limit)
    t1 = time.perf_counter()
    traces = LaunchTraces.from_recorder(rec, nwg * wpg, wpg)
    wgs, cu_wgs, release_ids = _simulated(traces, mode, tried, nwg, ncu, wpg, limit)
    garr = np.asarray(wgs, np.int64)
    waves = (garr[:, None] * wpg + np.arange(wpg)[None, :]).reshape(-1)
    steps = traces.wave_steps(waves)
    groups = [[(int(g * wpg + j), steps[int(g * wpg + j)]) for j in range(wpg)] for g in wgs]
    wanted = np.zeros(nwg * wpg, bool)
    wanted[waves] = True
    return LaunchTrace(
        p.target, p.device, [d.text for d in img.code],
        {name: (sp.start, sp.end) for name, sp in img.functions.items()},
        traces.pcs.tolist(), traces.lanes.tolist(), groups, release_ids, rec.summaries(wanted),
        tried[1], nwg, wpg, ncu, cu_wgs, wps,
        float(sum(a.nbytes for a in spec.buffers if not a.output)),
        _requested_bytes(img, traces, p, nwg, len(tried[0]) if tried[0] else nwg),
        dict(rec.unaddressed), t1 - t0)


def _emulate(emu, spec, values, rec, mode: str, nwg: int, ncu: int, limit):
    """Run what ``mode`` emulates: (the workgroups run alone, or None for the whole
    launch; the profile). A launch that does not complete is a TimingError."""
    with lane_order_for_timing():
        if mode == "all":
            res = emu.launch(spec, values, trace=rec)
            status, message, profile, wgs = res.status, res.message, res.profile, None
        else:
            if mode == "cu":
                wgs = list(range(_sampled_cu(emu, spec, values, nwg, ncu), nwg, ncu))[:limit]
            else:
                wgs = sampled_workgroups(nwg, 1, SPREAD_WORKGROUPS)
            status, message, profile = run_workgroups(emu, spec, values, wgs, rec)
    if status != "ok":
        raise TimingError(f"the launch does not run to completion ({status}: "
                          f"{message}), so it cannot be timed", kernel=spec.kernel)
    return wgs, profile


def _simulated(traces, mode: str, tried, nwg: int, ncu: int, wpg: int, limit):
    """(the simulated CU's workgroups, how many that CU runs in the whole launch, the
    launch-global index each stands for in dispatch order)."""
    if mode == "cu":
        wgs = tried[0]
        return wgs, len(range(wgs[0], nwg, ncu)), list(wgs)
    work = traces.wave_work().reshape(nwg, wpg).sum(axis=1)
    if mode == "spread":
        g = max(tried[0], key=lambda x: (work[x], x))
        return [g], 1, [nwg - 1]
    cu_work = np.bincount(np.arange(nwg) % ncu, weights=work, minlength=min(ncu, nwg))
    every = list(range(int(np.argmax(cu_work)), nwg, ncu))
    return every[:limit], len(every), every[:limit]


def _requested_bytes(img, traces, p: Params, nwg: int, emulated: int) -> float:
    """Requested VMEM bytes of the whole launch (lanes x width; each step per wave)."""
    recs = [instruction_record(d.text, p) for d in img.code]
    widths = np.array([r.width if r.kind == K_VMEM else 0 for r in recs], np.float64)
    step_bytes = widths[traces.pcs] * traces.lanes
    counts = np.repeat(np.array([len(w) for w in traces.seg_waves], np.float64),
                       np.diff(traces.seg_bounds))
    return float((step_bytes * counts).sum()) * nwg / max(1, emulated)


def simulate_launch(trace: LaunchTrace, p: Params) -> TimingResult:
    """The per-CU simulation of ``trace`` under ``p``; a launch whose CU runs more
    workgroups than were simulated gets its remaining rounds at the rate of the last
    simulated round, when that rate is steady (``steady``), and no sooner than its L2,
    MALL and HBM servers can serve their bytes (``CuMemory.backlog_bound``: a memory
    backlog grows over more rounds than are simulated)."""
    import time

    t1 = time.perf_counter()
    recs = [instruction_record(t, p) for t in trace.texts]
    k = len(trace.groups)
    memory = _cu_memory(p, trace.nwg, trace.inputs_bytes, k)
    release = [g * p.dispatch_cycles_per_workgroup for g in trace.global_ids]
    cu_res = simulate_cu(recs, trace.pcs, trace.lanes, trace.groups, p, trace.occupancy,
                         memory, len(trace.texts), trace.mem_steps, release)
    scale = trace.cu_wgs / max(1, k)
    cu_cycles, steady = float(cu_res.cycles), None
    if k < trace.cu_wgs:
        interval, steady = steady_interval(cu_res.wg_end, cu_res.wg_start,
                                           resident_limit(trace.wpg, p, trace.occupancy))
        rest = trace.cu_wgs - k
        cu_cycles = max(cu_cycles + rest * interval, memory.backlog_bound(rest / max(1, k)))
    cycles = cu_cycles + p.launch_overhead_cycles
    per_fn = trace.per_fn
    mem = {key: (v * scale if isinstance(v, float) else v) for key, v in cu_res.memory.items()}
    mem["unaddressed"] = dict(trace.unaddressed)
    dram = mem["hbm_bytes"] * trace.nwg / max(1, trace.cu_wgs)

    def split(arr):
        return {name: arr[a:b] * scale for name, (a, b) in per_fn.items()}

    return TimingResult(
        cycles=int(math.ceil(cycles)), seconds=cycles / p.clock_hz, stalls=split(cu_res.stalls),
        issue=split(cu_res.issue), occupancy=trace.occupancy, target=p.target,
        cu_cycles=int(math.ceil(cu_cycles)), cu_workgroups=trace.cu_wgs, workgroups=trace.nwg,
        waves=trace.nwg * trace.wpg, vmem_bytes=trace.vmem_total, dram_bytes=dram,
        profile=trace.profile, emulation_seconds=trace.emulation_seconds,
        model_seconds=time.perf_counter() - t1, memory=mem, lines=split(cu_res.lines),
        lds_conflicts=split(cu_res.lds_conflicts), device=p.device,
        overhead_cycles=int(p.launch_overhead_cycles), simulated_workgroups=k, steady=steady,
        params=p.tag)


def steady_interval(ends: list[float], starts: list[float],
                    per_round: int) -> tuple[float, bool]:
    """The cycles per workgroup of the last simulated round (workgroups in dispatch order,
    ``per_round`` resident at once: the last end minus the round before's last end, over
    ``per_round``), and whether it is steady: the last round's workgroups took as long as
    the round before's, from dispatch to end, within ``STEADY_TOLERANCE``. Only a steady
    rate may be extrapolated."""
    r = max(1, per_round)
    n = len(ends)
    if n < 2 * r:
        span = max(ends) / max(1, n) if ends else 0.0
        return span, False
    last = (max(ends[n - r:]) - max(ends[n - 2 * r:n - r])) / r
    d1 = sum(e - s for e, s in zip(ends[n - 2 * r:n - r], starts[n - 2 * r:n - r])) / r
    d2 = sum(e - s for e, s in zip(ends[n - r:], starts[n - r:])) / r
    return last, abs(d2 - d1) <= STEADY_TOLERANCE * max(d1, d2, 1e-9)


def _cu_memory(p: Params, nwg: int, inputs_bytes: float, k: int) -> CuMemory:
    """The simulated CU's memory: its share of the achievable (``hbm_efficiency`` of peak)
    HBM and of the MALL bandwidth (the launch's CUs share them evenly) and its HBM budget:
    the share of the bytes the launch reads (the non-output buffers) that its ``k``
    simulated workgroups read, each from HBM once."""
    active = max(1, min(p.compute_units, nwg))
    mp = p.memory
    return CuMemory(mp, l2_bpc=p.l2_bytes_per_cycle_per_cu,
                    hbm_bpc=p.hbm_bytes_per_cycle * p.hbm_efficiency / active,
                    mall_bpc=(mp.mall_bytes_per_cycle / active) if mp.mall else 1.0,
                    hbm_budget=inputs_bytes * k / max(1, nwg))
