"""Run a built batch: each program on x86 (the reference) and on the emulator for every
(target, opt) object, and compare.

The emulator decodes each object once and launches every kernel in it; the x86
library is loaded with ctypes. Both ``out`` buffers start from the same poison
bytes, so a lane that exits early leaves the same untouched slots on both sides.
Outcomes: match, mismatch (lane, slot, both bit patterns), excluded (a
documented rule of compare.py), refused (the mnemonic the emulator does not
model), fault, timeout; compile_error and host_error are about the toolchain,
not the emulator, and counted apart.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from asmevo.emu import Emulator, UnsupportedInstruction
from asmevo.launch.spec import ArgSpec, LaunchSpec
from experiments.emufuzz import values
from experiments.emufuzz.build import Built
from experiments.emufuzz.compare import Verdict, code_exclusion, compare
from experiments.emufuzz.ir import Program, ty

POISON = 0xA5
EMU_TIME_LIMIT = 120.0
# Generated loops are bounded by construction, but -O0 code runs long: a budget per wave
# well above the emulator's default (which is meant to catch runaway candidates).
WAVE_INSTRUCTIONS = 2_000_000

try:
    from _ctypes import dlclose as _dlclose
except ImportError:      # pragma: no cover (non-glibc)
    _dlclose = None


@dataclass(frozen=True)
class Result:
    program: str
    target: str
    opt: str
    outcome: str          # match | mismatch | excluded | refused | fault | timeout | ...
    detail: str = ""
    verdict: Verdict | None = None
    seconds: float = 0.0
    tags: tuple[str, ...] = ()      # what the kernel uses: scratch, lds, calls


    @property
    def key(self) -> str:
        return f"{self.target}-{self.opt}"


def launch_spec(p: Program) -> LaunchSpec:
    """The launch of ``p``: buffers as raw-bit carriers, scalars by their bits."""
    args = [ArgSpec(f"in{b}", "buffer", ty(t).carrier, p.n) for b, t in enumerate(p.buffers)]
    args.append(ArgSpec("out", "buffer", "uint64", p.n * len(p.outputs), output=True))
    args.append(ArgSpec("n", "scalar", "uint32", value=p.n))
    args += [ArgSpec(f"s{k}", "scalar", ty(t).carrier, value=bits)
             for k, (t, bits) in enumerate(p.scalars)]
    return LaunchSpec(name=p.name, kernel=p.name, code_object=None, grid=(p.grid, 1, 1),
                      block=(p.block, 1, 1), args=tuple(args))


def host_outputs(lib: ctypes.CDLL, p: Program, bufs: list[np.ndarray]) -> np.ndarray:
    fn = getattr(lib, f"{p.name}_host")
    fn.restype = None
    fn.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                   ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64),
                   ctypes.POINTER(ctypes.c_uint64)]
    keep = [np.ascontiguousarray(b) for b in bufs]
    ptrs = (ctypes.c_void_p * max(1, len(keep)))(*[b.ctypes.data for b in keep])
    sc = np.array([bits for _, bits in p.scalars] or [0], dtype=np.uint64)
    out = np.full(p.n * len(p.outputs), np.uint64(int.from_bytes(bytes([POISON]) * 8, "little")))
    fn(p.n, p.block, p.grid, ptrs, sc.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
       out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)))
    return out


def kernel_functions(emu: Emulator, name: str) -> list:
    """The kernel ``name`` and its noinline body (``{name}_body``, C++-mangled)."""
    return [f for f in emu.program.functions if f.name == name or f"{name}_body" in f.name]


def kernel_tags(emu: Emulator, name: str) -> tuple[str, ...]:
    """What the compiled kernel relies on, to sort failures by emulator area."""
    kd = emu.program.source.kernel(name).descriptor
    tags = []
    if kd.private_segment_fixed_size or kd.uses_dynamic_stack:
        tags.append("scratch")
    if kd.group_segment_fixed_size:
        tags.append("lds")
    if len(kernel_functions(emu, name)) > 1:
        tags.append("calls")
    return tuple(tags)


def run_emulator(emu: Emulator, p: Program, bufs: list[np.ndarray], target: str, opt: str,
                 expected: np.ndarray) -> Result:
    res = _run_emulator(emu, p, bufs, target, opt, expected)
    return replace(res, tags=kernel_tags(emu, p.name))


def _run_emulator(emu: Emulator, p: Program, bufs: list[np.ndarray], target: str, opt: str,
                  expected: np.ndarray) -> Result:
    t0 = time.perf_counter()
    inputs = {f"in{b}": arr for b, arr in enumerate(bufs)}
    waves = p.grid * -(-p.block // 64)
    res = emu.launch(launch_spec(p), inputs, fill={"out": POISON}, time_limit=EMU_TIME_LIMIT,
                     max_instructions=WAVE_INSTRUCTIONS * waves)
    dt = time.perf_counter() - t0
    if res.status != "ok":
        err = res.error
        if isinstance(err, UnsupportedInstruction) and hasattr(err, "mnemonic"):
            return Result(p.name, target, opt, "refused", err.mnemonic, seconds=dt)
        outcome = "refused" if res.status == "unsupported" else res.status
        hit = _code_rule(emu, p) if outcome == "timeout" else None
        if hit is not None:
            return Result(p.name, target, opt, "excluded", f"{hit[0]}: {hit[1]} ({res.message})",
                          Verdict("excluded", None, 0, {hit[0]: 1}), dt)
        return Result(p.name, target, opt, outcome, res.message, seconds=dt)
    v = compare(p, bufs, expected, res.outputs["out"])
    hit = _code_rule(emu, p) if v.outcome == "mismatch" else None
    if hit is not None:
        v = Verdict("excluded", None, 0, {**(v.excluded or {}), hit[0]: v.count})
        return Result(p.name, target, opt, "excluded", f"{hit[0]}: {hit[1]}", v, dt)
    detail = v.first.describe() + (f" ({v.count} elements)" if v.count > 1 else "") \
        if v.first else ",".join(f"{k}:{n}" for k, n in (v.excluded or {}).items())
    return Result(p.name, target, opt, v.outcome, detail, v, dt)


def _code_rule(emu: Emulator, p: Program) -> tuple[str, str] | None:
    """A documented code rule (exclusions.toml ``applies = "code"``) that the kernel of
    ``p`` or its noinline body shows, for a run that mismatched or never ended."""
    return code_exclusion([f.instructions for f in kernel_functions(emu, p.name)])


def run_batch(programs: list[Program], built: Built, targets, opts) -> list[Result]:
    """Every program x every (target, opt); a missing object is a compile_error."""
    results: list[Result] = []
    bufs = {p.name: values.inputs(p) for p in programs}
    expected: dict[str, np.ndarray] = {}
    if built.host is not None:
        lib = ctypes.CDLL(str(built.host))
        try:
            for p in programs:
                expected[p.name] = host_outputs(lib, p, bufs[p.name])
        finally:
            if _dlclose is not None:
                _dlclose(lib._handle)
    for target, opt in ((t, o) for o in opts for t in targets):
        path = built.objects.get((target, opt))
        if path is None:
            results += [Result(p.name, target, opt, "compile_error", built.errors.get(opt, ""))
                        for p in programs]
            continue
        emu = Emulator(Path(path))
        for p in programs:
            if p.name not in expected:
                results.append(Result(p.name, target, opt, "host_error",
                                      built.errors.get("x86", "")))
                continue
            results.append(run_emulator(emu, p, bufs[p.name], target, opt, expected[p.name]))
    return results

