"""Many launches of one kernel in one wider emulator pass, each bit-identical to its
launch run alone.

Verification launches the same kernel a dozen times per candidate (input sets,
run variants with other garbage, serial schedules, an approximate member), and
on small launches the interpreter's cost per instruction hardly depends on how
many waves execute it. :func:`launch_many` stacks the launches' waves into one
:class:`~asmevo.emu.machine.state.State` (each launch keeps its own global memory,
kernarg segment, private memory and clock) and runs them together:

* **Scheduling is per launch.** Each lockstep approximate-member class of
  launches (launches whose waves may share an instruction) and each serial
  launch is a *class* with its own groups, barrier waits and running group
  (its *cursor*: pc, waves, limit), advanced by exactly the rules of
  :func:`asmevo.emu.run.scheduler.run_batch`. Cursors at the same pc run as one
  instruction stream until a class's own rule stops it. Launches share no
  memory, so only each launch's own order of instructions matters, and that
  order is the one it has alone (lockstep: the lowest-pc group of a launch
  always runs next, whatever the other launches do; serial: one cursor per
  launch).
* **Instructions that touch a launch's memory run per launch** (global, flat,
  buffer, scratch, scalar memory, s_memtime): a sub-context over that launch's
  waves with that launch's :class:`~asmevo.emu.run.dispatch.Launch`, so bounds
  checks, poison notes, faults and private slots are those of the launch run
  alone. Everything else sees a :class:`_Shared` launch that refuses any
  per-launch attribute.
* **Anything unusual gives up** instead of guessing: any error inside the pass
  (a fault, a refusal, a budget or time limit, a per-launch attribute read by
  an instruction classified as shared) returns None, and the caller runs the
  launches one by one. A launch too large for one batch of
  :meth:`~asmevo.emu.run.launch.Emulator.launch` is not batched.

``tests/emu/test_batch.py`` and ``experiments/bench_fastpath.py`` compare every
field of every result with launches run alone (corpus kernels, fuzzer programs).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from asmevo.emu.run import launchcache
from asmevo.emu.run.dispatch import Launch, initial_state, setup
from asmevo.emu.run.image import Image
from asmevo.emu.machine.racecheck import (MAX_SLOTS, TRACKED_MEMORY, Conflict, LdsTracker,
                                          MemoryTracker)
from asmevo.emu.run.scheduler import _INF, _SerialGroups, _cbranch, _merge, _next_address, _pc_of
from asmevo.emu.machine.state import EXEC, Ctx, State
from asmevo import counters
from asmevo.memo import Memo

SCHEDULES = {"lockstep": None, "serial": "forward", "serial_reverse": "reverse"}
MAX_LANES = 1 << 20            # work-items in one pass (memory vs. speed)
# mnemonic prefixes of instructions that read or write a launch's own state
PER_LAUNCH = ("global_", "flat_", "buffer_", "scratch_", "tbuffer_", "image_", "s_load",
              "s_buffer_", "s_store", "s_memtime", "s_memrealtime", "s_dcache", "s_atomic",
              "s_scratch", "s_sendmsg")

# how passes ended (tests and benchmarks read it: a corpus kernel should never give up)
STATS = counters.group("emu.batch", ("batched", "launches", "gave_up", "speculated", "conflicts"))
# consecutive conflicts per kernel launch (spec name, size, kernel): after two, serial
# launches of it run serially again, retried every SPECULATION_RETRY-th pass
_CONFLICTS: Memo[int] = Memo("emu.batch.conflicts", 257)
SPECULATION_RETRY = 16


class _GiveUp(Exception):
    """The pass cannot reproduce every launch exactly; run them one by one."""


@dataclass(frozen=True)
class Request:
    """One launch of :func:`launch_many`: the keyword arguments of Emulator.launch."""

    inputs: dict
    guard_bytes: int = 0
    guard_fill: int = 0
    garbage_seed: int | None = None
    schedule: str = "lockstep"
    approx_variant: int = 0
    aliases: tuple = ()                 # ((buffer, other buffer, byte offset), ...)
    order: str | None = None            # workgroups one at a time, in this order
    spec: object = None                 # this launch's spec where it is not the pass's:
                                        # another member of its family, of the same shape


class _Shared:
    """What every launch of a pass has in common: all that an instruction running on
    waves of several launches may read. Anything else is a per-launch attribute."""

    _FIELDS = ("kernel", "spec", "co", "processor", "code_base", "lds_bytes", "block",
               "grid", "waves_per_wg")

    def __init__(self, ln: Launch, approx_variant: int | None):
        for f in self._FIELDS:
            setattr(self, f, getattr(ln, f))
        if approx_variant is not None:      # None: waves of several members
            self.approx_variant = approx_variant
        self.wave_base = 0

    @property
    def kernel_name(self) -> str:
        return self.kernel.name

    hwreg_value = Launch.hwreg_value

    def __getattr__(self, name):
        if name.startswith("__"):       # copy's and pickle's probes
            raise AttributeError(name)
        raise _GiveUp(f"an instruction run for several launches read their {name!r}")


class _BatchCtx(Ctx):
    """A Ctx that also counts waves and active lanes per launch."""

    __slots__ = ("launch_of", "nl", "per_w", "per_lanes", "per", "mixed", "members", "parts")

    def __init__(self, st, waves, launch, launch_of: np.ndarray, nl: int, mixed: bool = False,
                 members: np.ndarray | None = None):
        self.launch_of = launch_of
        self.nl = nl
        self.mixed = mixed      # waves of several approximate members
        self.members = members  # then each wave's member (valu's NaN choice reads it)
        self.per_w = np.bincount(launch_of[waves], minlength=nl)
        super().__init__(st, waves, launch)

    def exec_changed(self) -> None:
        super().exec_changed()
        self.per_lanes = np.bincount(self.launch_of[self.waves], self.st.nactive[self.idx],
                                     minlength=self.nl).astype(np.int64)
        self.per = (self.per_w, self.per_lanes)   # a new object whenever either changes
        self.parts = None       # its per-launch contexts (_Pass._each_launch), per EXEC

    def launch_parts(self, launches: list) -> list:
        """``(launch index, its waves, a Ctx over them with its Launch)`` for each launch
        with waves here, in wave order; kept while EXEC stays (each Ctx's view of EXEC)."""
        parts = self.parts
        if parts is None:
            waves = self.waves
            owner = self.launch_of[waves]
            bounds = np.flatnonzero(np.diff(owner)) + 1
            parts = self.parts = []
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, waves.size]):
                i = int(owner[lo])
                parts.append((i, waves[lo:hi], Ctx(self.st, waves[lo:hi], launches[i])))
        return parts


def _exec_words(c: Ctx) -> np.ndarray:
    """The EXEC words of ``c``'s waves (a copy)."""
    return np.array(c.st.s[EXEC:EXEC + 2, c.idx])


def _exec_moved(c: Ctx, before: np.ndarray) -> bool:
    """Whether instructions run on parts of ``c`` changed an EXEC word of its waves since
    ``before``: only then is ``c``'s view of EXEC (mask, lanes, per-launch lanes, and
    what is kept per EXEC) stale; the state's masks follow the words (refresh_exec)."""
    return not np.array_equal(before, c.st.s[EXEC:EXEC + 2, c.idx])


class _Class:
    """Launches whose waves may share an instruction under one scheduling rule."""

    def __init__(self, key: int, approx: int, serial: str | None, waves: np.ndarray,
                 entry: int, slot_of_wave: np.ndarray):
        self.key, self.approx, self.serial = key, approx, serial
        if serial:      # "workgroups": slot_of_wave is each wave's workgroup
            self.groups = _SerialGroups(slot_of_wave, reverse=serial == "reverse")
            self.groups.add(entry, waves)
        else:
            self.groups = {entry: waves}
        self.waiting: dict[int, np.ndarray] = {}
        self.cursor: list | None = None        # [pc, waves, limit] of its running group

    def pop(self) -> None:
        if self.serial:
            pc, waves = self.groups.pop_next()
            self.cursor = [pc, waves, _INF]
            return
        pc = min(self.groups)
        waves = self.groups.pop(pc)
        self.cursor = [pc, waves, min(self.groups) if self.groups else _INF]

    def stop(self, pc: int, waves: np.ndarray) -> None:
        """Its running group stops at ``pc`` (a group again) as run_batch's would."""
        _merge(self.groups, pc, waves)
        self.cursor = None


def batchable(emu, spec, request: Request) -> bool:
    """Whether :func:`launch_many` can take this launch: one batch when run alone."""
    from asmevo.emu.run.launch import BATCH_LANES
    waves = int(np.prod(spec.grid)) * -(-int(np.prod(spec.block)) // 64)
    return request.schedule in SCHEDULES and waves * 64 <= BATCH_LANES


def launch_many(emu, spec, requests: list[Request], *, max_instructions: int | None = None,
                time_limit: float | None = None, like=None):
    """``[emu.launch(spec, **r) for r in requests]`` (every field but ``seconds``) from
    one pass, or None where that cannot be guaranteed (then launch them one by one).

    ``like``: the Emulator of a program ``emu``'s differs from in a few rows (K0, for
    a candidate): where the pass reaches a moment at which its whole state is that
    program's, it takes that program's future (:mod:`asmevo.emu.run.converge`)."""
    STATS["launches"] += 1
    try:
        with np.errstate(all="ignore"):
            out = None
            key = (spec.name, spec.size, spec.kernel)
            if _speculate(key, requests):
                try:
                    out = _launch_many(emu, spec, requests, max_instructions, time_limit,
                                       speculate=True, like=like)
                    _CONFLICTS.put(key, 0)
                    STATS["speculated"] += out is not None
                except Conflict:
                    _CONFLICTS.put(key, _CONFLICTS.get(key, 0) + 1)
                    STATS["conflicts"] += 1
            if out is None:
                out = _launch_many(emu, spec, requests, max_instructions, time_limit,
                                   like=like)
    except Exception:   # noqa: BLE001 - whatever went wrong, the launches run alone
        out = None
    STATS["batched" if out is not None else "gave_up"] += 1
    return out


def _set_up(co, k, spec, requests, nv: int):
    """The launches of ``requests`` laid out and their waves' initial state stacked, or
    None where one pass cannot take them."""
    from asmevo.emu.run.launch import _batch_workgroups, workgroup_order
    launches, states = [], []
    reserve = _reserve(spec, requests)
    for r in requests:
        ln = setup(co, k, r.spec or spec, r.inputs, guard_bytes=r.guard_bytes,
                   guard_fill=r.guard_fill, poison_seed=r.garbage_seed,
                   aliases={n: (b, o) for n, b, o in r.aliases} or None, reserve=reserve)
        ln.approx_variant = int(r.approx_variant)
        n = int(np.prod((r.spec or spec).grid))       # a member's grid may be its own
        if r.order is not None:
            ln.order = workgroup_order(r.order, n)
        if _batch_workgroups(ln, nv) < n:
            return None
        if launches and ln.code_base != launches[0].code_base:
            return None
        ln.wave_base = sum(s.nwaves for s in states)
        launches.append(ln)
        states.append(initial_state(ln, 0, n, nv, r.garbage_seed))
        if (ln.wave_base + states[-1].nwaves) * 64 > MAX_LANES:
            return None
    return launches, stacked(states)


def _reserve(spec, requests) -> dict | None:
    """Per buffer, the most bytes any launch's spec gives it: every launch lays out its
    memory for those, so all of them have their code at one address (an instruction
    the pass runs for several launches may read it). None where all share ``spec``."""
    specs = [r.spec for r in requests if r.spec is not None]
    if not specs:
        return None
    return {a.name: max(x.nbytes for s in [spec, *specs] for x in s.buffers if x.name == a.name)
            for a in spec.buffers}


def same_shape(a, b) -> bool:
    """Whether launches of specs ``a`` and ``b`` can share one pass: one kernel, block,
    dynamic LDS and stack, the same buffers in the same order (the grids may differ:
    each launch has its own waves; no instruction reads the grid but through memory)."""
    return (a.kernel, a.block, a.dynamic_lds, a.dynamic_stack,
            [x.name for x in a.buffers]) == (b.kernel, b.block, b.dynamic_lds,
                                             b.dynamic_stack, [x.name for x in b.buffers])


def prepare_like(emu, spec, requests: list[Request], *,
                 max_instructions: int | None = None) -> None:
    """K0's checkpoints (:mod:`asmevo.emu.run.converge`) for these launches, in the mode
    :func:`launch_many` tries first, ahead of the candidates that will ask for them."""
    from asmevo.emu.run import converge
    mode = _speculate((spec.name, spec.size, spec.kernel), requests)
    _, key, make = _like(emu, spec, requests, max_instructions, mode)
    with np.errstate(all="ignore"):
        converge.prepare(key, make, check_tracked)


def _like(like, spec, requests, max_instructions, speculate) -> tuple:
    """K0's (``like``'s) decoded program, the key its pass over ``requests`` is kept
    under, and a maker of that pass (:func:`asmevo.emu.run.converge.attempt`'s arguments)."""
    from asmevo.emu.run.launch import _vgpr_file_size
    co = like.program.source
    k = co.kernel(spec.kernel)
    img = like.image_for(k)
    key = (co.sha256, launchcache.key(co, k, spec, _vgpr_file_size(img, k), requests),
           speculate, max_instructions)
    return img, key, lambda: make_pass(like, spec, requests, max_instructions, None, speculate)


def _speculate(key: tuple, requests: list[Request]) -> bool:
    """Run the serial launches in lockstep with the others (:mod:`asmevo.emu.machine.racecheck`
    proves the result or refuses it), unless that kept failing for this launch."""
    if not any(SCHEDULES[r.schedule] is not None or r.order is not None for r in requests):
        return False
    return _CONFLICTS.get(key, 0) < 2 or STATS["launches"] % SPECULATION_RETRY == 0


def _launch_many(emu, spec, requests, max_instructions, time_limit, speculate=False,
                 like=None):
    t0 = time.perf_counter()
    made = make_pass(emu, spec, requests, max_instructions, time_limit, speculate)
    if made is None:
        return None
    run, launches, st = made
    tail = None
    if like is not None:
        from asmevo.emu.run import converge
        try:
            k0 = _like(like, spec, requests, max_instructions, speculate)
        except Exception:   # noqa: BLE001 - K0 cannot stand in (no such kernel): run in full
            k0 = None
        if k0 is not None:
            tail = converge.attempt(run, *k0, check_tracked)
    if tail is None:
        run.run()
        final, used = launches, run.used
    else:       # the pass met K0's: K0's future, the candidate's notes (converge.Tail)
        final, used = tail.finish(launches), tail.used
    check_tracked(run.tracked, final)
    run.count(None if tail is None else tail.trace)
    seconds = (time.perf_counter() - t0) / len(requests)
    out = results(run, spec, final, requests, used, seconds)
    launchcache.recycle(launches, st)   # the results hold copies: the next pass's buffers
    return out


def make_pass(emu, spec, requests, max_instructions, time_limit, speculate=False):
    """A pass over ``requests``' launches of ``emu``'s kernel, set up and not yet run:
    ``(pass, launches, state)``, or None where one pass cannot take them."""
    from asmevo.emu.run.launch import DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE, \
        _vgpr_file_size, check_size
    check_size(spec)
    for r in requests:
        if r.spec is not None:
            check_size(r.spec)
    co = emu.program.source
    k = co.kernel(spec.kernel)
    img = emu.image_for(k)
    entry = img.entry_index(spec.kernel)
    nv = _vgpr_file_size(img, k)
    for r in requests:
        if r.schedule not in SCHEDULES or not isinstance(r.approx_variant, (int, np.integer)) \
                or r.approx_variant < 0 or (r.order is not None and r.schedule != "lockstep") \
                or (r.spec is not None and not same_shape(r.spec, spec)):
            return None
    ck = launchcache.key(co, k, spec, nv, requests)
    got = launchcache.get(ck, co, k)
    if got is None:
        got = _set_up(co, k, spec, requests, nv)
        if got is None:
            return None
        launchcache.put(ck, *got)
    launches, st = got
    spans = _spans(launches, st.nwaves)
    launch_of = np.repeat(np.arange(len(requests)), [n for _, n in spans])
    budget = max_instructions if max_instructions is not None else \
        max(DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE * max(n for _, n in spans))
    tracked = _track(st, launches, launch_of, requests) if speculate else None
    classes = _classes(requests, spans, entry, st.wave_in_wg, tracked, st.wg_of_wave)
    counts = np.zeros((len(img.code), len(requests)), np.int64)
    lanes = np.zeros_like(counts)
    run = _Pass(img, st, launches, launch_of, classes, counts, lanes, budget,
                None if time_limit is None else time.monotonic() + time_limit, tracked)
    return run, launches, st


def _spans(launches, nwaves: int) -> list[tuple[int, int]]:
    """(first wave, waves) of each launch in the stacked state."""
    bases = [ln.wave_base for ln in launches] + [nwaves]
    return [(b, e - b) for b, e in zip(bases, bases[1:])]


def check_tracked(tracked, launches) -> None:
    if tracked is not None and any(len(ln.mem.poison_reads) >= 16
                                   for ln, t in zip(launches, tracked) if t):
        raise Conflict("a serial launch's out-of-contract notes reached their cap")


def results(run: "_Pass", spec, launches, requests, used, seconds: float) -> list:
    """Every launch's result from its final ``launches`` and ``run``'s counts."""
    from asmevo.emu.run.launch import collect_result
    counts, lanes = run.counts, run.lanes
    return [collect_result(run.img, r.spec or spec, ln, None, counts[:, i], lanes[:, i],
                           int(used[i]), int(lanes[:, i].sum()), guard_bytes=r.guard_bytes,
                           seconds=seconds)
            for i, (ln, r) in enumerate(zip(launches, requests))]


def _track(st, launches, launch_of, requests) -> list[str | None]:
    """Which launches are serial ones run in lockstep under :mod:`asmevo.emu.machine.racecheck`'s
    trackers (installed here: ``st.tracker``, each such launch's ``mem.track``):
    "forward"/"reverse" (waves one at a time: LDS and global memory tracked) or
    "workgroups" (workgroups one at a time, in an order: global memory tracked; the
    waves of a workgroup run together either way)."""
    tracked = ["workgroups" if r.order is not None else SCHEDULES[r.schedule]
               for r in requests]
    if launches[0].waves_per_wg > MAX_SLOTS:
        raise Conflict("more waves per workgroup than the LDS tracker has slots")
    st.tracker = LdsTracker(st, np.array([_wave_serial(t) for t in tracked])[launch_of],
                            max(st.lds_bytes, 4))
    for ln, t in zip(launches, tracked):
        if t:
            ln.mem.track = MemoryTracker(ln.mem)
    return tracked


def _wave_serial(t: str | None) -> bool:
    return t in ("forward", "reverse")


def _classes(requests, spans: list[tuple[int, int]], entry: int, slot_of_wave,
             tracked: list[str | None] | None = None, wg_of_wave=None) -> list[_Class]:
    """The pass's classes: the lockstep launches of each approximate member (serial ones
    the trackers prove may join them: ``tracked``), and each other serial launch alone,
    a workgroup-ordered one by its workgroups."""
    out: list[_Class] = []
    lockstep: dict[int, list[int]] = {}
    for i, r in enumerate(requests):
        if (tracked and tracked[i]) or (r.order is None and SCHEDULES[r.schedule] is None):
            lockstep.setdefault(int(r.approx_variant), []).append(i)
    for approx, members in lockstep.items():
        waves = np.concatenate([np.arange(spans[i][0], sum(spans[i])) for i in members])
        out.append(_Class(len(out), approx, None, waves, entry, slot_of_wave))
    for i, r in enumerate(requests):
        waves = np.arange(spans[i][0], sum(spans[i]))
        if tracked and tracked[i]:
            continue
        if r.order is not None:
            out.append(_Class(len(out), int(r.approx_variant), "workgroups", waves, entry,
                              wg_of_wave))
            continue
        serial = SCHEDULES[r.schedule]
        if serial is not None:
            out.append(_Class(len(out), int(r.approx_variant), serial, waves, entry,
                              slot_of_wave))
    return out


def stacked(states: list[State]) -> State:
    """One State holding the waves of every state in ``states`` in order (workgroups
    renumbered after each other; each keeps its LDS bytes)."""
    first = states[0]
    nwg = [int(s.wg_of_wave.max()) + 1 if s.nwaves else 0 for s in states]
    offs = np.cumsum([0] + nwg[:-1])
    wg = np.concatenate([s.wg_of_wave + o for s, o in zip(states, offs)])
    st = State(sum(s.nwaves for s in states), first.v.shape[0], first.lds_bytes, wg, first.mode)
    for name in ("v", "s"):
        setattr(st, name, np.concatenate([getattr(s, name) for s in states], axis=1))
    for name in ("scc", "execmask", "exec_full", "nactive", "wave_in_wg"):
        setattr(st, name, np.concatenate([getattr(s, name) for s in states]))
    stride = max(first.lds_bytes, 4)
    st.lds[:sum(nwg) * stride] = np.concatenate([s.lds[:n * stride] for s, n in
                                                 zip(states, nwg)])
    st.dispatch_sgprs, st.dispatch_vgprs = first.dispatch_sgprs, first.dispatch_vgprs
    return st


def _per_launch_flags(img: Image) -> list[bool]:
    return [d.ctl == "op" and d.mnemonic.startswith(PER_LAUNCH) for d in img.code]


class _Pass:
    """The classes' cursors, advanced together; see the module docstring."""

    def __init__(self, img, st, launches, launch_of, classes, counts, lanes, budget,
                 deadline, tracked: list[str | None] | None = None):
        self.img, self.st, self.launches, self.launch_of = img, st, launches, launch_of
        self.classes, self.counts, self.lanes = classes, counts, lanes
        self.nl = len(launches)
        self.budget, self.deadline = budget, deadline
        self.used = np.zeros(self.nl, np.int64)
        self.steps = 0
        self.trace: list = []     # (pc, (waves, lanes) per launch) of every step: count()
        self.per_launch = _per_launch_flags(img)
        self.reads_variant = [d.ctl == "op" and d.variant for d in img.code]
        self.tracked = tracked              # serial launches run in lockstep (racecheck)
        self.tracker = st.tracker
        # a tracked launch's waves have run as one group so far (no split, no barrier)
        self.together = [_wave_serial(t) for t in tracked] if tracked is not None else []
        self.waves_of = np.diff([ln.wave_base for ln in launches] + [st.nwaves])
        if tracked is not None:
            self.tracked_wg = np.zeros(int(st.wg_of_wave.max()) + 1, bool)
            serial = np.array([_wave_serial(t) for t in tracked])[launch_of]
            self.tracked_wg[st.wg_of_wave[serial]] = True
        self.class_of = np.zeros(st.nwaves, np.int64)
        self.member_of = np.zeros(st.nwaves, np.int64)
        for k in classes:
            for pc, w in (k.groups._groups.items() if k.serial else k.groups.items()):
                self.class_of[w] = k.key
                self.member_of[w] = k.approx
        self.shared = {}
        wg = st.wg_of_wave
        nwg = int(wg.max()) + 1 if st.nwaves else 0
        self.live = np.bincount(wg, minlength=nwg).astype(np.int64)
        self.arrived = np.zeros(nwg, np.int64)
        # run() stops at the first moment every runnable group is at a row >= stop_at, no
        # such row having run (asmevo.emu.run.converge compares passes there); run() again goes on
        self.stop_at = _INF
        self.paused = False

    def _shared(self, approx: int | None) -> _Shared:
        sh = self.shared.get(approx)
        if sh is None:
            sh = self.shared[approx] = _Shared(self.launches[0], approx)
        return sh

    def run(self) -> None:
        classes = self.classes
        self.paused = False
        while True:
            for k in classes:
                if k.cursor is None and k.groups:
                    k.pop()
            active = [k for k in classes if k.cursor is not None]
            if not active:
                break
            pc = min(k.cursor[0] for k in active)
            if pc >= self.stop_at:
                self.paused = True
                return
            part = [k for k in active if k.cursor[0] == pc]
            # the cursors it could share instructions with wait further on: pausing at
            # the first of them (as run_batch's groups do) lets them run as one again
            ahead = [k.cursor[0] for k in active if k.cursor[0] > pc]
            self._cluster(part, pc, min(ahead, default=_INF))
        if any(k.waiting for k in classes):
            raise _GiveUp("waves wait at a barrier that can never complete")

    def count(self, tail: list | None = None) -> None:
        """Per-instruction wave and lane counts of every launch, from the steps' trace
        (summed once at the end instead of two small array additions per step), and
        from ``tail``'s steps after it (the steps another pass ran on from a moment)."""
        trace = self.trace if tail is None else self.trace + tail
        if not trace:
            return
        rows: dict[int, int] = {}
        vecs: list[tuple[np.ndarray, np.ndarray]] = []
        pcs = np.empty(len(trace), np.int64)
        which = np.empty(len(trace), np.int64)
        for i, (pc, per) in enumerate(trace):
            k = rows.get(id(per))
            if k is None:
                k = rows[id(per)] = len(vecs)
                vecs.append(per)
            pcs[i], which[i] = pc, k
        np.add.at(self.counts, pcs, np.stack([v[0] for v in vecs])[which])
        np.add.at(self.lanes, pcs, np.stack([v[1] for v in vecs])[which])

    def _ctx(self, part: list[_Class]) -> _BatchCtx:
        waves = part[0].cursor[1] if len(part) == 1 else \
            np.sort(np.concatenate([k.cursor[1] for k in part]))
        mixed = any(k.approx != part[0].approx for k in part)
        if any(self.together):
            n = np.bincount(self.launch_of[waves], minlength=self.nl)
            for i, t in enumerate(self.together):
                if t and 0 < n[i] < self.waves_of[i]:
                    self.together[i] = False
        return _BatchCtx(self.st, waves, self._shared(None if mixed else part[0].approx),
                         self.launch_of, self.nl, mixed,
                         self.member_of[waves] if mixed else None)

    def _headroom(self, c: _BatchCtx) -> int:
        sel = c.per_w > 0
        return int(((self.budget - self.used[sel]) // c.per_w[sel]).min())

    def _cluster(self, part: list[_Class], pc: int, pause: int = _INF) -> None:
        """Run the cursors of ``part`` (all at ``pc``) together until each stops or they
        part ways, or until they reach ``pause`` (another cursor waits there); a cursor
        that only parted ways or paused keeps running in a later round."""
        code, ncode = self.img.code, len(self.img.code)
        trace = self.trace.append
        c = self._ctx(part)
        limit = min(k.cursor[2] for k in part)
        room = self._headroom(c)
        done = 0
        stop_at = self.stop_at
        try:
            while True:
                if pc >= stop_at:       # the moment run() stops at: no row past it runs
                    for k in part:
                        k.cursor[0] = pc
                    return
                if pc >= ncode or pc < 0:
                    raise _GiveUp("execution ran past the end of the code")
                d = code[pc]
                trace((pc, c.per))
                done += 1
                if done > room:
                    raise _GiveUp("a launch's instruction budget is exhausted")
                self.steps += 1
                if self.deadline is not None and (self.steps & 1023) == 0 \
                        and time.monotonic() > self.deadline:
                    raise _GiveUp("time limit")
                c.address = d.address
                if d.ctl == "op":
                    if self.per_launch[pc]:
                        self._each_launch(d, c)
                    elif c.mixed and self.reads_variant[pc]:
                        self._each_member(d, c)
                    else:
                        self.st.track_ctx = c
                        d.fn(c)
                    pc += 1
                else:
                    pc = self._control(part, d, c, pc)
                    if pc is None:
                        return
                if pc >= pause and pc < limit:
                    for k in part:
                        k.cursor[0] = pc
                    return
                if pc >= limit:
                    stay = self._stop_at(part, pc)
                    if not stay:
                        return
                    self.used += done * c.per_w
                    done = 0
                    part = stay
                    c = self._ctx(part)
                    limit = min(k.cursor[2] for k in part)
                    room = self._headroom(c)
        finally:
            self.used += done * c.per_w

    def _control(self, part: list[_Class], d, c: _BatchCtx, pc: int) -> int | None:
        """The control instruction ``d`` at ``pc`` for the cursors of ``part``: the pc they
        all go on at, or None when they stopped or parted ways (each cursor then says where
        it goes on); traps and faults give up (the launch alone says what happens)."""
        ctl = d.ctl
        if ctl == "branch":
            return d.target
        if ctl == "cbranch":
            nxt, taken = _cbranch(d, c, pc)
            if nxt is None:
                self._split(part, c, pc, taken, d.target)
            return nxt
        if ctl in ("end", "barrier"):
            self._retire(part, c, pc, ctl)
            return None
        if ctl == "getpc":
            nxt_addr = _next_address(d, self.launches[0])
            c.sw64(d.extra["dst"], np.full(c.w, nxt_addr, np.uint64))
            return pc + 1
        if ctl in ("setpc", "swappc"):
            dests = self._jump(d, c, ctl)
            if len(dests) > 1:
                self._split_jump(part, c, d, dests)
                return None
            return dests[0][1]
        raise _GiveUp(f"{ctl} at {d.text!r}")

    @staticmethod
    def _stop_at(part: list[_Class], pc: int) -> list[_Class]:
        """``part`` reached ``pc``: the cursors whose group's limit that is stop (a group
        again, as in run_batch); the others, now at ``pc``, are returned to run on."""
        stay = []
        for k in part:
            if pc >= k.cursor[2]:
                k.stop(pc, k.cursor[1])
            else:
                stay.append(k)
        for k in stay:
            k.cursor[0] = pc
        return stay

    def _each_launch(self, d, c: _BatchCtx) -> None:
        """``d`` on each launch's waves of ``c`` with that launch's Launch."""
        scalar = d.mnemonic.startswith("s_")
        before = _exec_words(c) if scalar else None
        for i, waves, sub in c.launch_parts(self.launches):
            if self.tracked and self.tracked[i]:
                self._tracked_launch(d, c, waves, i)
                continue
            sub.address = c.address
            self.st.track_ctx = sub
            d.fn(sub)
        # the launches' contexts are kept while the group's EXEC stays; a scalar load
        # into EXEC moves it, and then the group and its kept contexts are renewed
        if scalar and _exec_moved(c, before):  # scalar memory may load EXEC; vector never
            c.exec_changed()

    def _tracked_launch(self, d, c: _BatchCtx, waves: np.ndarray, i: int) -> None:
        """``d`` on the waves of serial launch ``i`` run in lockstep. While its waves have
        run as one group, a wave slot at a time in its schedule's order: the serial launch
        alone runs its first slot's waves as one group up to their first split or barrier,
        so the out-of-contract reads that slot notes there are noted alike (which waves,
        how many accesses, in which order). A note anywhere else is a conflict: when and
        with what counts it is made follows the schedule."""
        if not d.mnemonic.startswith(TRACKED_MEMORY):
            raise Conflict(f"{d.mnemonic} in a serial launch run in lockstep")
        ln = self.launches[i]
        if self.tracked[i] == "workgroups":     # in order, each workgroup's notes first
            notes = (len(ln.mem.poison_reads), len(ln.mem.lane_conflicts))
            sub = Ctx(self.st, waves, ln)
            sub.address = c.address
            self.st.track_ctx = sub
            d.fn(sub)
            if (len(ln.mem.poison_reads), len(ln.mem.lane_conflicts)) != notes:
                raise Conflict("a workgroup-ordered launch made a note whose order follows "
                               "the schedule")
            return
        if self.together[i]:
            slot = self.st.wave_in_wg[waves]
            order = np.unique(slot)
            if self.tracked[i] == "reverse":
                order = order[::-1]
            groups = [waves[slot == k] for k in order]
        else:
            groups = [waves]
        for g, ws in enumerate(groups):
            notes = len(ln.mem.poison_reads)
            sub = Ctx(self.st, ws, ln)
            sub.address = c.address
            self.st.track_ctx = sub
            d.fn(sub)
            if len(ln.mem.poison_reads) != notes and not (self.together[i] and g == 0):
                raise Conflict("a serial launch read outside its contract where the order "
                               "of its notes follows the schedule")

    def _each_member(self, d, c: _BatchCtx) -> None:
        """``d`` (it reads the launch's approx_variant) on the waves of ``c`` of each
        approximate member, with that member's shared launch. Every launch's waves
        belong to one member, so no launch is split."""
        member = self.member_of[c.waves]
        before = _exec_words(c)
        for m in np.unique(member):
            sub = Ctx(self.st, c.waves[member == m], self._shared(int(m)))
            sub.address = c.address
            self.st.track_ctx = sub
            d.fn(sub)
        if _exec_moved(c, before):
            c.exec_changed()

    def _mine(self, c: _BatchCtx, k: _Class) -> np.ndarray:
        return self.class_of[c.waves] == k.key

    def _split(self, part, c, pc: int, taken: np.ndarray, target: int) -> None:
        """A conditional branch that not all cursors take alike: each class follows its
        own rule (a class whose waves disagree splits into two groups)."""
        for k in part:
            mine = self._mine(c, k)
            w, t = c.waves[mine], taken[mine]
            if t.all() or not t.any():
                dest = target if t.all() else pc + 1
                k.cursor[1] = w
                if dest >= k.cursor[2]:
                    k.stop(dest, w)
                else:
                    k.cursor[0] = dest
            else:
                _merge(k.groups, target, w[t])
                _merge(k.groups, pc + 1, w[~t])
                k.cursor = None

    def _retire(self, part, c, pc: int, ctl: str) -> None:
        """s_endpgm or s_barrier: the waves leave (or wait); released workgroups'
        waves rejoin their class's groups."""
        wg = self.st.wg_of_wave
        for i in np.unique(self.launch_of[c.waves]).tolist() if any(self.together) else ():
            self.together[i] = False            # a barrier or the end: the first group stops
        for k in part:
            waves = c.waves[self._mine(c, k)]
            if ctl == "end":
                np.subtract.at(self.live, wg[waves], 1)
            else:
                np.add.at(self.arrived, wg[waves], 1)
                _merge(k.waiting, pc + 1, waves)
            k.cursor = None
            self._release(k, np.unique(wg[waves]))

    def _release(self, k: _Class, touched: np.ndarray) -> None:
        live, arrived, wg = self.live, self.arrived, self.st.wg_of_wave
        ready = touched[(arrived[touched] == live[touched]) & (arrived[touched] > 0)]
        if ready.size == 0:
            return
        arrived[ready] = 0
        if self.tracker is not None:
            self.tracker.barrier(ready[self.tracked_wg[ready]])
        is_ready = np.zeros(live.size, bool)
        is_ready[ready] = True
        for rpc in list(k.waiting):
            ws = k.waiting[rpc]
            sel = is_ready[wg[ws]]
            if sel.any():
                _merge(k.groups, rpc, ws[sel])
                rest = ws[~sel]
                if rest.size:
                    k.waiting[rpc] = rest
                else:
                    del k.waiting[rpc]

    def _jump(self, d, c, ctl) -> list[tuple[np.ndarray, int]]:
        """s_setpc/s_swappc: (waves' positions in ``c``, destination index) per target."""
        target = np.broadcast_to(d.extra["src"](c), (c.w,)).astype(np.uint64)
        if ctl == "swappc":
            c.sw64(d.extra["dst"], np.full(c.w, _next_address(d, self.launches[0]),
                                           np.uint64))
        name = self.launches[0].kernel_name
        return [(target == t, _pc_of(self.img, self.launches[0], int(t), d, name))
                for t in np.unique(target)]

    def _split_jump(self, part, c, d, dests) -> None:
        for k in part:
            mine = self._mine(c, k)
            w = c.waves[mine]
            mine_dests = [(sel[mine], dst) for sel, dst in dests if sel[mine].any()]
            if len(mine_dests) == 1:
                dst = mine_dests[0][1]
                k.cursor[1] = w
                if dst >= k.cursor[2]:
                    k.stop(dst, w)
                else:
                    k.cursor[0] = dst
            else:
                for sel, dst in mine_dests:
                    _merge(k.groups, dst, w[sel])
                k.cursor = None
