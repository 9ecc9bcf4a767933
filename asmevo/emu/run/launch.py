"""The emulator's public entry points: :class:`Emulator`, :func:`run_launch`,
:class:`LaunchResult`.

A launch never raises for what a kernel does: faults, timeouts and
unsupported instructions come back as a :class:`LaunchResult` verdict (call
``raise_for_status()`` to turn one into its exception). Bad arguments from the
caller (a spec that does not fit the kernel) still raise.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asmevo import knobs
from asmevo.emu.run.dispatch import Launch, initial_state, setup
from asmevo.emu.errors import EmulatorError, InternalError, LaunchError
from asmevo.emu.run.image import Image, callees_use_agprs, decoded_image
from asmevo.emu.run.scheduler import Budget, run_batch
from asmevo.targets.amdgpu.codeobject import CodeObject, load
from asmevo.targets.amdgpu.program import Program
from asmevo.launch.spec import LaunchSpec, np_dtype
from asmevo.memo import IdentityMemo, Memo, cached

BATCH_LANES = 1 << 19          # work-items per batch of workgroups (memory vs. speed)
BATCH_BYTES = 384 << 20        # cap on a batch's VGPR file
DEFAULT_BUDGET_PER_WAVE = 100_000
DEFAULT_BUDGET_MIN = 300_000


@dataclass
class FunctionProfile:
    """Per instruction of one function: wave-level executions and active lanes (sums)."""

    name: str
    counts: np.ndarray
    lanes: np.ndarray


@dataclass
class LaunchResult:
    status: str                     # ok | fault | timeout | unsupported
    message: str
    outputs: dict[str, np.ndarray]
    profile: dict[str, FunctionProfile]
    waves: int
    instructions_executed: int      # wave-level
    lane_instructions: int
    seconds: float = 0.0
    guards: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)
    kernel: str | None = None
    address: int | None = None      # instruction address of a fault
    byte_address: int | None = None
    error: EmulatorError | None = None
    # reads of memory outside the launch's contract (guards, past the kernarg segment)
    poison_reads: list[str] = field(default_factory=list)
    # with ``diagnose``: reads of registers / LDS bytes nothing had written
    undefined_reads: list[str] = field(default_factory=list)
    # stores where lanes of one wave wrote one byte with different values
    lane_conflicts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def raise_for_status(self) -> "LaunchResult":
        if self.error is not None:
            raise self.error
        return self


def check_size(spec: LaunchSpec) -> None:
    """Refuse a launch too large to emulate (``ASMEVO_EMU_MAX_WAVES``) before minutes of
    work: GPU-sized grids belong on a GPU, or need the knob raised."""
    waves = int(np.prod(spec.grid)) * -(-int(np.prod(spec.block)) // 64)
    refusal = knobs.MAX_EMULATED_WAVES.exceeded(waves, f"launch of {spec.name} [{spec.size}]")
    if refusal:
        raise LaunchError(refusal, path=str(spec.path) if spec.path else None)


def _as_program(obj) -> Program:
    if isinstance(obj, Program):
        return obj
    if isinstance(obj, (str, Path, bytes)):
        obj = load(obj)
    if isinstance(obj, CodeObject):
        return _recover_cached(obj)
    raise LaunchError(f"cannot emulate a {type(obj).__name__}; pass a CodeObject, a Program, "
                      "bytes or a path")


_RECOVERED: Memo[Program] = Memo("emu.launch.recovered", 17)


def _recover_cached(co: CodeObject) -> Program:
    from asmevo.targets.amdgpu.recover import recover
    key = co.sha256
    prog = _RECOVERED.get(key)
    if prog is None:
        prog = recover(co, verify=False)   # the emulator runs text; encodings need no check
        _RECOVERED.put(key, prog)
    return prog


class Emulator:
    """A decoded program, ready to launch any of its kernels many times."""

    def __init__(self, code: CodeObject | Program | bytes | str | Path):
        self.program = _as_program(code)
        self.image: Image = decoded_image(self.program)
        self._agpr_callees = callees_use_agprs(self.program)

    def image_for(self, kernel) -> Image:
        """The image a launch of ``kernel`` runs: callees decoded with its accum_offset
        when they name AGPRs (the same image as ``self.image`` otherwise)."""
        if not self._agpr_callees:
            return self.image
        return decoded_image(self.program, kernel.descriptor.accum_offset)

    def launch(self, spec: LaunchSpec, inputs: dict, *, kernel: str | None = None,
               max_instructions: int | None = None, time_limit: float | None = None,
               guard_bytes: int = 0, guard_fill: int = 0, fill: dict | None = None,
               raise_errors: bool = False, trace=None, garbage_seed: int | None = None,
               schedule: str = "lockstep", diagnose: bool = False,
               approx_variant: int = 0, aliases: dict | None = None,
               order: str | None = None) -> LaunchResult:
        """Run one launch of ``spec`` on ``inputs`` (dict name -> array or scalar).

        Buffers start with ``inputs[name]`` (zeros when absent) or, for names in
        ``fill``, a repeated byte pattern (int or bytes), e.g. to poison outputs.
        ``trace(decoded, ctx)``, when given, is called before every instruction.
        ``garbage_seed`` fills registers and LDS the dispatch leaves undefined
        with seeded random bits (default: zeros). ``schedule="serial"``
        (``"serial_reverse"``) runs each wave alone up to its next barrier,
        lowest (highest) wave first, instead of in lockstep groups: slow, but a
        read that races a write of another wave (no barrier between them) then
        sees stale data, as hardware may.
        ``approx_variant`` picks the member of every approximate instruction's
        function family (:mod:`asmevo.emu.numerics.approx`): 0 = correctly rounded
        values, k >= 1 = another deterministic member within the ISA's bound.
        ``guard_bytes`` maps that many extra bytes on each side of every buffer,
        filled with ``guard_fill``: writes there are not faults, and their final
        bytes come back in ``result.guards[name] = (before, after)``.
        ``garbage_seed`` also fills the kernarg allocation past the segment.
        Reads of guards and of those bytes are listed in ``result.poison_reads``.
        ``diagnose`` tracks which registers and LDS bytes were ever written
        (slow) and lists reads of the others in ``result.undefined_reads``.
        ``aliases`` overlaps buffers (:func:`asmevo.emu.run.dispatch.setup`); ``order``
        runs the workgroups one at a time in that order (:data:`ORDERS`). Stores whose
        lanes write one byte with different values are in ``result.lane_conflicts``.
        """
        mode = _run_mode(schedule, order, approx_variant)
        t0 = time.perf_counter()
        check_size(spec)
        prog = self.program
        name = kernel or spec.kernel
        co = prog.source
        k = co.kernel(name)
        img = self.image_for(k)
        entry = img.entry_index(name)
        ln = setup(co, k, spec, inputs, guard_bytes=guard_bytes, guard_fill=guard_fill, fill=fill,
                   poison_seed=garbage_seed, aliases=aliases)
        ln.approx_variant = int(approx_variant)
        if order is not None:
            ln.order = workgroup_order(order, int(np.prod(spec.grid)))
        shadow = None
        if diagnose:
            from asmevo.emu.run.shadow import Shadow
            shadow = Shadow(k.descriptor.accum_offset)
            trace = _chain(shadow, trace)
        nwg_total = int(np.prod(spec.grid))
        total_waves = nwg_total * ln.waves_per_wg
        budget = Budget(max_instructions if max_instructions is not None else
                        max(DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE * total_waves),
                        None if time_limit is None else time.monotonic() + time_limit)
        counts = np.zeros(len(img.code), np.int64)
        lanes = np.zeros(len(img.code), np.int64)
        nv = _vgpr_file_size(img, k)
        wg_per_batch = _batch_workgroups(ln, nv)
        err: EmulatorError | None = None
        try:
            with np.errstate(all="ignore"):   # NaN/inf arithmetic is the point, not noise
                for wg0 in range(0, nwg_total, wg_per_batch):
                    wg1 = min(nwg_total, wg0 + wg_per_batch)
                    st = initial_state(ln, wg0, wg1, nv, garbage_seed)
                    run_batch(img, st, ln, entry, counts, lanes, budget, trace, serial=mode)
        except EmulatorError as exc:
            err = exc
        except (FloatingPointError, OverflowError, ZeroDivisionError) as exc:
            err = InternalError(f"internal arithmetic error: {exc}", kernel=name)
        if err is not None and raise_errors:
            raise err
        undefined = []
        if shadow is not None:
            from asmevo.emu.run.shadow import describe
            undefined = describe(shadow.events)
        return collect_result(img, spec, ln, err, counts, lanes, budget.used, budget.lanes,
                              guard_bytes=guard_bytes, seconds=time.perf_counter() - t0,
                              undefined=undefined)


# workgroups one at a time, each to its end: a store one makes into another's data lands
# before or after that one runs, as on hardware, where workgroups start in no promised order
ORDERS = ("ascending", "descending", "shuffle:<seed>")
_SCHEDULES = {"lockstep": None, "serial": "forward", "serial_reverse": "reverse"}


def _run_mode(schedule: str, order: str | None, approx_variant) -> str | None:
    """run_batch's ``serial`` for a launch's schedule and workgroup order, after checking
    both and the approximate member."""
    if schedule not in _SCHEDULES:
        raise LaunchError(f"unknown schedule {schedule!r}; known: {', '.join(_SCHEDULES)}")
    if not isinstance(approx_variant, (int, np.integer)) or approx_variant < 0:
        raise LaunchError(f"approx_variant must be an int >= 0, not {approx_variant!r}")
    if order is None:
        return _SCHEDULES[schedule]
    if schedule != "lockstep":
        raise LaunchError(f"a workgroup order runs workgroups whole; not with the {schedule} "
                          "schedule")
    return "workgroups"


def workgroup_order(order: str, nwg: int) -> np.ndarray:
    """Dispatch slot -> workgroup id for an ``order`` of :meth:`Emulator.launch`."""
    if order == "ascending":
        return np.arange(nwg)
    if order == "descending":
        return np.arange(nwg)[::-1].copy()
    kind, _, seed = order.partition(":")
    if kind == "shuffle" and seed.isdigit():
        return np.random.default_rng([int(seed), 0x0D3E]).permutation(nwg)
    raise LaunchError(f"unknown workgroup order {order!r}; known: {', '.join(ORDERS)}")


@cached("emu.run.launch.emulator_for", 32)
def emulator_for(code: bytes) -> "Emulator":
    """The decoded :class:`Emulator` of code object bytes, one per content in this
    process: a candidate's differential runs and its modeled timing launch share it."""
    return Emulator(code)


def collect_result(img: Image, spec: LaunchSpec, ln: Launch, err: EmulatorError | None,
                   counts: np.ndarray, lanes: np.ndarray, used: int, lane_total: int, *,
                   guard_bytes: int, seconds: float, undefined=()) -> LaunchResult:
    """A launch's result from its final memory and counters (one launch run alone, or
    one of a batch run together: :mod:`asmevo.emu.run.batch`)."""
    outputs = {}
    guards = {}
    for a in spec.buffers:
        al = ln.buffers[a.name]
        # [:nbytes]: a buffer another one is laid over has grown past its own elements
        outputs[a.name] = ln.mem.view(al)[:a.nbytes].copy().view(np_dtype(a.dtype))
        if guard_bytes:
            g = ln.mem.view(al, with_guard=True)
            guards[a.name] = (g[:al.guard].tobytes(), g[al.guard + al.size:].tobytes())
    profile = {}
    for fname, span in img.functions.items():
        profile[fname] = FunctionProfile(fname, counts[span.start:span.end].copy(),
                                         lanes[span.start:span.end].copy())
    status = "ok" if err is None else err.status
    poison = [f"{e['what']}: read by '{_text_at(img, e['address'])}' ({e['lanes']} accesses)"
              for e in ln.mem.poison_reads]
    conflicts = [f"{e['what']}: '{_text_at(img, e['address'])}' at byte address "
                 f"0x{e['byte_address']:x}" for e in ln.mem.lane_conflicts]
    return LaunchResult(
        status=status, message="ok" if err is None else str(err), outputs=outputs,
        profile=profile, waves=int(np.prod(spec.grid)) * ln.waves_per_wg,
        instructions_executed=used, lane_instructions=lane_total, seconds=seconds,
        guards=guards, kernel=ln.kernel_name, address=None if err is None else err.address,
        byte_address=None if err is None else err.byte_address, error=err, poison_reads=poison,
        undefined_reads=list(undefined), lane_conflicts=conflicts)


def _chain(first, second):
    if second is None:
        return first

    def both(d, c):
        first(d, c)
        second(d, c)
    return both


def _text_at(img: Image, address: int | None) -> str:
    idx = img.by_address.get(address) if address is not None else None
    return img.code[idx].text if idx is not None else "?"


def _vgpr_file_size(img: Image, kernel) -> int:
    """Registers the batch state needs: every v/a register the program names (AGPRs
    sit above accum_offset in the unified file)."""
    top_v, top_a = _register_tops(img)
    return max(1, top_v, kernel.descriptor.accum_offset + top_a if top_a else 0)


_TOPS: IdentityMemo[tuple[int, int]] = IdentityMemo(17, "emu.launch.tops")   # by program


def _register_tops(img: Image) -> tuple[int, int]:
    """(highest v + 1, highest a + 1) over the whole program, once per program (a batch
    object of many kernels is launched once per kernel, through an image per
    accum_offset when its callees name AGPRs)."""
    hit = _TOPS.get(img.program)
    if hit is not None:
        return hit
    top_v = top_a = 0
    for ins in img.program.functions:
        for i in ins.instructions:
            v, a = _operand_tops(i.operands)
            top_v, top_a = max(top_v, v), max(top_a, a)
    return _TOPS.put(img.program, (top_v, top_a))


_OPERAND_TOPS: Memo[tuple[int, int]] = Memo("emu.launch.operand_tops", (1 << 16) + 1)


def _operand_tops(operands: str) -> tuple[int, int]:
    """(highest v + 1, highest a + 1) an operand string names (0: none), memoized by the
    string: a candidate's program repeats almost every line of the one before it."""
    hit = _OPERAND_TOPS.get(operands)
    if hit is None:
        from asmevo.targets.amdgpu.registers import register_ranges
        v = a = 0
        for r in register_ranges(operands):
            if r.kind == "v":
                v = max(v, r.last + 1)
            elif r.kind == "a":
                a = max(a, r.last + 1)
        hit = _OPERAND_TOPS.put(operands, (v, a))
    return hit


def _batch_workgroups(ln: Launch, nv: int) -> int:
    per_wg_lanes = ln.waves_per_wg * 64
    by_lanes = max(1, BATCH_LANES // per_wg_lanes)
    by_bytes = max(1, BATCH_BYTES // (per_wg_lanes * 4 * nv))
    by_private = max(1, ln.extra.get("private", {}).get("slots", 1 << 30) // ln.waves_per_wg)
    return max(1, min(by_lanes, by_bytes, by_private))


def run_launch(code_object_or_program, spec: LaunchSpec, inputs: dict, *,
               max_instructions: int | None = None, **kwargs) -> LaunchResult:
    """Emulate one launch; see :meth:`Emulator.launch` for the keyword arguments."""
    return Emulator(code_object_or_program).launch(spec, inputs,
                                                   max_instructions=max_instructions, **kwargs)
