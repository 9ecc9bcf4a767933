"""Differential runs: is K' the same function as K0 on identical launches?

For every input set: fresh allocations, outputs poisoned, guards around every
buffer; K0 runs once (its result is cached per input set), K' runs twice. All
buffers are compared bitwise, inputs included, and the guards too. Two runs of
K' that differ make it nondeterministic (a race, or a read of something the
launch leaves undefined). The first difference found becomes the verdict's
reason: buffer, index, expected, got, and how many elements differ.

On the first input set K0 and K' also run under member 1 of the
approximate-instruction families (the emulator's ``approx_variant``: v_rcp,
v_exp, ... within their ISA error bound, another MFMA summation order), so a
candidate equal to K0 only for the correctly rounded member is not equal.

Each run variant has its own garbage in undefined registers and LDS, its own
poison past the kernarg segment and its own guard fill
(:func:`asmevo.verify.inputs.guard_pattern`), so a candidate that depends on any
of them gives results that change from run to run. When a candidate is
rejected for a difference that such state explains, the verdict names what it
read (memory outside the contract always; never-written registers and LDS
bytes through a diagnosing rerun, on devices that can: the emulator), leaving
out what K0 itself reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from asmevo.runtime.device import Device, RunResult
from asmevo.verify.inputs import POISON_BYTE, guard_pattern, input_sets, poisoned, set_poison
from asmevo.launch.spec import LaunchSpec
from asmevo.verdict import Verdict
from asmevo.verify.errors import VerifyError

GUARD_BYTES = 256


# Members of the approximate-instruction families (asmevo.emu.numerics.approx) checked beyond
# member 0, each on the first input sets K0 runs; a GPU device ignores them.
APPROX_VARIANTS = (1,)
APPROX_SETS = 1


@dataclass
class Reference:
    """K0's results per input set; computed once, reused for every candidate.

    ``approx``: K0's results under other members of the approximate-instruction
    families, keyed by (input set, member)."""

    sets: list[tuple[str, dict]]
    results: dict[str, RunResult] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)   # set -> why K0 could not run it
    k0: bytes = b""
    diagnosed: dict[str, list[str]] = field(default_factory=dict)   # K0's undefined reads
    approx: dict[tuple[str, int], RunResult] = field(default_factory=dict)
    poison: dict[str, int] = field(default_factory=dict)   # set -> its outputs' poison byte
    # set -> its launch's spec where it is not the reference's own (family members of one
    # launch shape, checked in one pass)
    specs: dict[str, LaunchSpec] = field(default_factory=dict)

    def __post_init__(self):
        self.poison = self.poison or {lb: set_poison(j) for j, (lb, _) in enumerate(self.sets)}


def reference_runs(device: Device, k0: bytes, spec: LaunchSpec, *, seeds=(0, 1, 2),
                   special: bool = True, sets: list[tuple[str, dict]] | None = None,
                   approx_variants=APPROX_VARIANTS, approx_sets: int = APPROX_SETS,
                   specs: dict[str, LaunchSpec] | None = None) -> Reference:
    """K0 on every input set (``sets``, or the seeded draws plus special values), and
    under each member in ``approx_variants`` on the first ``approx_sets`` sets.
    ``specs``: the launch of a set whose spec is not ``spec`` (of the same shape)."""
    ref = Reference(sets if sets is not None else input_sets(spec, seeds, special), k0=k0,
                    specs=dict(specs or {}))
    if device.measured:
        approx_variants = ()      # a GPU is one fixed member of every family
    plan = [(label, v, 0) for label, _ in ref.sets for v in (0, GARBAGE_VARIANT)]
    plan += [(label, 0, m) for label, _ in ref.sets[:approx_sets] for m in approx_variants]
    runs = _Runs(device, k0, spec, dict(ref.sets), plan, poison=ref.poison, specs=ref.specs)
    for label, values in ref.sets:
        res = runs.get(label, 0)
        why = f"{res.status}: {res.message}" if not res.ok else \
            _varies(ref.specs.get(label, spec), res, runs.get(label, GARBAGE_VARIANT), label,
                    ref.poison[label])
        if why is None:
            ref.results[label] = res
        else:
            ref.skipped[label] = why
    if not ref.results:
        label, why = next(iter(ref.skipped.items()))
        raise VerifyError(f"K0 itself fails on every input set ({len(ref.skipped)}; "
                          f"{label}: {' '.join(why.split())[:200]})")
    labels = [lb for lb, _ in ref.sets if lb in ref.results][:approx_sets]
    for label in labels:
        for member in approx_variants:
            res = runs.get(label, 0, member)
            if res.ok:
                ref.approx[(label, member)] = res
            else:
                ref.skipped[f"{label} (approximate member {member})"] = \
                    f"{res.status}: {res.message}"
    for res in [*ref.results.values(), *ref.approx.values()]:
        for img in res.buffers.values():     # every candidate compares with these:
            img.data.setflags(write=False)   # nothing may write them
    return ref


class _Runs:
    """The launches of one code object a check makes, computed ahead in one wider
    device pass where the device offers one (``run_many``: the emulator), each the
    result the launch gives alone; a launch not planned, or one the pass could not
    take, runs alone when asked for."""

    def __init__(self, device: Device, code: bytes, spec: LaunchSpec, values_of: dict,
                 plan: list[tuple[str, int, int]], like: bytes | None = None,
                 poison: dict[str, int] | None = None,
                 specs: dict[str, LaunchSpec] | None = None):
        self.device, self.code, self.spec, self.values_of = device, code, spec, values_of
        self.poison, self.specs = poison or {}, specs or {}
        self.ready: dict[tuple[str, int, int], RunResult] = {}
        if len(plan) > 1:
            got = device.run_many(code, spec, [self._kwargs(*key) for key in plan], like=like)
            if got is not None:
                self.ready = dict(zip(plan, got))

    def _kwargs(self, label: str, variant: int, member: int = 0) -> dict:
        kw = _run_kwargs(self.specs.get(label, self.spec), self.values_of[label], variant,
                         member, self.poison.get(label, POISON_BYTE))
        if label in self.specs:
            kw["spec"] = self.specs[label]
        return kw

    def get(self, label: str, variant: int, member: int = 0) -> RunResult:
        res = self.ready.pop((label, variant, member), None)
        if res is not None:
            return res
        kw = self._kwargs(label, variant, member)
        return self.device.run(self.code, kw.pop("spec", self.spec), kw.pop("buffers"), **kw)


# the lockstep variant of a candidate's second run (other garbage in uninitialised state and
# guards, :func:`_variants`): K0 runs under it too, since a set where K0's own outputs change
# with that garbage would make every candidate nondeterministic
GARBAGE_VARIANT = 2


def _varies(spec: LaunchSpec, first: RunResult, again: RunResult, label: str,
            poison: int) -> str | None:
    """Why K0 cannot be the reference on this input set though its run succeeded: its
    run under other garbage (``again``) fails or differs (the spec lets the inputs reach
    outside K0's buffers or undefined state; a domain or ``special = false`` bounds them),
    else None."""
    if not again.ok:
        return f"{again.status} with other garbage around it: {again.message}"
    d = compare_runs(spec, first, again, label, (guard_pattern(0), guard_pattern(GARBAGE_VARIANT)),
                     poison)
    if d is None:
        return None
    return ("nondeterministic: K0's own outputs change with the garbage in undefined state "
            f"({d.reason}); the spec lets this input set read it")


def _run_kwargs(spec: LaunchSpec, values: dict, variant: int, member: int = 0,
                poison: int = POISON_BYTE) -> dict:
    """One planned run's device arguments: fresh poisoned buffers, its guard fill."""
    kw = dict(buffers=poisoned(spec, values, poison), guard_bytes=GUARD_BYTES,
              guard_pattern=guard_pattern(variant), variant=variant)
    if member:
        kw["approx_variant"] = member
    return kw


def candidate_plan(reference: Reference, runs: int, barriers: bool) -> list[tuple[str, int, int]]:
    """(input set, run variant, approximate member) of every run a candidate check makes."""
    plan = [(label, v, 0) for j, (label, _) in enumerate(reference.sets)
            if label in reference.results for v in _variants(j, runs, barriers)]
    return plan + [(label, 0, member) for label, member in reference.approx]


def prepare(device: Device, reference: Reference, spec: LaunchSpec, *, runs: int = 2,
            barriers: bool = True) -> None:
    """Ahead of the first candidate, what the device keeps of K0's own pass over a
    candidate check's runs (the emulator: the checkpoints where a candidate's pass that
    meets K0's takes K0's future). Nothing a verdict depends on: a device without it,
    or a pass it cannot make, leaves every candidate to run in full."""
    if not device.batches or not reference.k0:
        return
    runs_of = _Runs(device, reference.k0, spec, dict(reference.sets), [],
                    poison=reference.poison, specs=reference.specs)
    device.prepare_like(reference.k0, spec, [runs_of._kwargs(label, v, m) for label, v, m
                                             in candidate_plan(reference, runs, barriers)])


def _variants(j: int, runs: int, barriers: bool) -> list[int]:
    """Run variants of input set ``j``: ``runs`` lockstep variants with other garbage in
    uninitialised registers, LDS, kernarg slack and guards; on the first input set of
    a kernel with barriers also waves one by one between barriers, lowest and then
    highest wave first (slow, so once). A race or a read of undefined state then
    shows as a difference."""
    variants = [2 * r for r in range(runs)]
    if j == 0 and runs > 1 and barriers:
        variants = [0, 1, 3] + variants[2:]
    return variants


def _show(arr: np.ndarray, i: int) -> str:
    """A value with its bit pattern, so NaN payloads and -0 are visible."""
    v = arr[i].item()
    if arr.dtype.kind == "f":
        bits = arr.view(f"u{arr.dtype.itemsize}")[i]
        return f"{v!r} (0x{int(bits):0{arr.dtype.itemsize * 2}x})"
    return repr(v)


def _guard_writes(guard: bytes, fill: int) -> np.ndarray:
    """The guard's bytes where a run wrote them, -1 where it still holds its fill."""
    g = np.frombuffer(guard, np.uint8).astype(np.int16)
    return np.where(g == fill, -1, g)


def compare_runs(spec: LaunchSpec, want: RunResult, got: RunResult, label: str,
                 fills: tuple[int, int] = (0x5A, 0x5A), poison: int = POISON_BYTE
                 ) -> Verdict | None:
    """None when ``got`` equals ``want`` bit for bit, else a mismatch verdict.

    ``fills``: the guard fill byte of each run; guards are compared as what each
    run wrote over its own fill. ``poison``: the outputs' byte before the runs."""
    for a in spec.buffers:
        w, g = want.buffers[a.name], got.buffers[a.name]
        for side, wg, gg in (("before", w.guard_before, g.guard_before),
                             ("after", w.guard_after, g.guard_after)):
            ww, gw = _guard_writes(wg, fills[0]), _guard_writes(gg, fills[1])
            if ww.shape != gw.shape or not np.array_equal(ww, gw):
                off = int(np.argmax(ww != gw)) if ww.shape == gw.shape else 0
                byte = off - len(gg) if side == "before" else a.nbytes + off
                elem = byte // np.dtype(w.data.dtype).itemsize
                return Verdict("mismatch", f"write outside buffer {a.name}: the guard {side} "
                               f"it changed at byte offset {byte} (element {elem}; the buffer "
                               f"has {w.data.size}) in input set {label}", {
                                   "input_set": label, "buffer": a.name, "guard": side,
                                   "byte_offset": byte})
        wb, gb = w.data.view(np.uint8), g.data.view(np.uint8)
        if wb.shape != gb.shape or not np.array_equal(wb, gb):
            wv, gv = w.data, g.data
            if wv.shape != gv.shape:
                return Verdict("mismatch", f"buffer {a.name} changed size", {"buffer": a.name})
            diff = np.flatnonzero((wv.view(np.uint8).reshape(wv.size, -1)
                                   != gv.view(np.uint8).reshape(gv.size, -1)).any(axis=1))
            i = int(diff[0])
            what = "output" if a.output else "in/out buffer" if a.inout else \
                "input (must stay unchanged)"
            unwritten = bool(a.output and
                             (gv.view(np.uint8).reshape(gv.size, -1)[i] == poison).all())
            reason = (f"{what} {a.name}[{i}]: expected {_show(wv, i)}, got {_show(gv, i)}"
                      f"{' (still the poison pattern: never written)' if unwritten else ''}; "
                      f"{diff.size} of {wv.size} elements differ (input set {label})")
            return Verdict("mismatch", reason, {
                "input_set": label, "buffer": a.name, "index": i, "expected": _show(wv, i),
                "got": _show(gv, i), "count": int(diff.size), "never_written": unwritten})
    return None


def _run_verdict(res: RunResult, label: str, want: RunResult | None = None) -> Verdict:
    """A run that did not finish; with memory outside the contract it read before
    (and K0 did not), since such a read often explains a fault that follows."""
    status = res.status if res.status in ("fault", "timeout", "unsupported") else "crash"
    k0 = {_what(p) for p in (want.details.get("poison_reads", ()) if want else ())}
    reads = [p for p in res.details.get("poison_reads", ()) if _what(p) not in k0]
    why = ("; before that it read what the launch leaves undefined: " + "; ".join(reads[:4])) \
        if reads else ""
    return Verdict(status, f"{res.message} (input set {label}){why}",
                   dict(res.details) | {"input_set": label})


def _region(read: str) -> str:
    """The allocation an out-of-contract read line names ("A", "kernarg segment")."""
    return _what(read).split(" bytes ", 1)[0]


def _new_outside_reads(got: RunResult, want: RunResult) -> list[str]:
    """The candidate's reads outside the launch's contract (past a buffer into its
    guard, past the kernarg segment) in allocations where K0 reads nothing outside."""
    k0 = {_region(p) for p in want.details.get("poison_reads", ())}
    return [p for p in got.details.get("poison_reads", ()) if _region(p) not in k0]


def _outside_verdict(got: RunResult, label: str, reads: list[str]) -> Verdict:
    """A candidate that reads memory K0 never touches is not K0's function even when
    the bytes it read did not reach an output here: on a GPU the same read can fault
    (past the end of an allocation) or see another kernel's data."""
    return Verdict("fault", "reads memory outside the launch's contract that K0 does "
                   f"not read (input set {label}): " + "; ".join(reads[:4]),
                   dict(got.details) | {"input_set": label, "outside_reads": reads})


def differential(device: Device, reference: Reference, k1: bytes, spec: LaunchSpec, *,
                 runs: int = 2, barriers: bool = True) -> Verdict:
    """Compare candidate ``k1`` against K0's cached reference runs.

    ``barriers``: whether the candidate synchronizes waves (then the serial
    variants that expose races are worth their cost)."""
    plan = candidate_plan(reference, runs, barriers)
    # K0's code: where the candidate's pass meets K0's in one state, the emulator
    # finishes it as K0's (the same results, without running the same steps again)
    ahead = _Runs(device, k1, spec, dict(reference.sets), plan, like=reference.k0 or None,
                  poison=reference.poison, specs=reference.specs)
    base_spec = spec
    for j, (label, values) in enumerate(reference.sets):
        want = reference.results.get(label)
        if want is None:
            continue
        poison = reference.poison[label]
        spec = reference.specs.get(label, base_spec)

        def run(values, variant: int, **kw) -> RunResult:
            return device.run(k1, spec, poisoned(spec, values, poison), guard_bytes=GUARD_BYTES,
                              guard_pattern=guard_pattern(variant), variant=variant, **kw)

        first: RunResult | None = None
        for r, variant in enumerate(_variants(j, runs, barriers)):
            got = ahead.get(label, variant)
            if not got.ok:
                return _run_verdict(got, label, want)
            if first is None:
                first = got
                bad = compare_runs(spec, want, got, label, poison=poison)
                if bad is not None:
                    return _explain(device, reference, spec, bad, got, label, values, run,
                                    variant)
            elif (d := compare_runs(spec, first, got, label,
                                    (guard_pattern(0), guard_pattern(variant)),
                                    poison)) is not None:
                v = Verdict("nondeterministic", "two runs on the same inputs differ (a race "
                            "between waves or a read of undefined state): "
                            f"{d.reason}", d.details | {"run": r})
                return _explain(device, reference, spec, v, got, label, values, run, variant,
                                varies=True)
            if (outside := _new_outside_reads(got, want)):     # outputs equal, but not K0's reads
                return _outside_verdict(got, label, outside)
            if (conflicts := new_conflicts(got, want)):
                return conflict_verdict(got, label, conflicts)
    verdict = _approx_members(ahead, reference)
    if verdict is not None:
        return verdict
    checked = [lb for lb, _ in reference.sets if lb in reference.results]
    members = sorted({m for _, m in reference.approx})
    return Verdict("equal", f"bit-equal on {len(checked)} input sets x {runs} runs"
                   + (f" and approximate-instruction members {members}" if members else ""),
                   {"input_sets": checked, "skipped": reference.skipped, "runs": runs,
                    "approx_variants": members,
                    "launches": launch_count(reference, runs, barriers)})


def launch_count(reference: Reference, runs: int, barriers: bool) -> int:
    """The launches a candidate check against ``reference`` makes."""
    return len(candidate_plan(reference, runs, barriers))


def new_conflicts(got: RunResult, want: RunResult) -> list[str]:
    """Stores of the candidate whose lanes wrote one address with different values,
    where K0's launch made none."""
    if want.details.get("lane_conflicts"):
        return []
    return list(got.details.get("lane_conflicts", ()))


def conflict_verdict(got: RunResult, label: str, conflicts: list[str]) -> Verdict:
    """Lanes of one wave storing different values to one address: the ISA does not say
    which lands, so the result is not K0's function even where it happens to match."""
    return Verdict("unspecified", "lanes of one wave store different values to the same "
                   f"address, which the ISA leaves unspecified and K0 never does (input set "
                   f"{label}): " + "; ".join(conflicts[:2]),
                   dict(got.details) | {"input_set": label, "lane_conflicts": conflicts})


def _approx_members(ahead: _Runs, reference: Reference) -> Verdict | None:
    """K' against K0 under the other members of the approximate-instruction families:
    a candidate that computes an approximate instruction's result another way (exact
    math for v_rcp, another summation for MFMA) differs here even when member 0 agrees."""
    spec = ahead.spec
    for (label, member), want in reference.approx.items():
        got = ahead.get(label, 0, member)
        where = f"{label}, approximate-instruction member {member}"
        if not got.ok:
            return _run_verdict(got, where, want)
        bad = compare_runs(spec, want, got, where, poison=reference.poison[label])
        if bad is None and (outside := _new_outside_reads(got, want)):
            return _outside_verdict(got, where, outside)
        if bad is not None:
            return Verdict("mismatch", f"{bad.reason}; K0 and the candidate agree only for "
                           "some members of an approximate instruction's family (the "
                           "candidate does not compute it the way K0 does)",
                           bad.details | {"approx_variant": member})
    return None


def _explain(device, reference: Reference, spec: LaunchSpec, verdict: Verdict, got: RunResult,
             label: str, values: dict, run, variant: int, *, varies: bool = False) -> Verdict:
    """``verdict`` with what the candidate read that the launch leaves undefined, when
    that explains the difference: memory outside the contract (noted on every run)
    and, when the result changes from run to run, never-written registers and LDS
    bytes (one diagnosing rerun). Reads K0 itself makes are left out."""
    want = reference.results[label]
    k0_poison = {_what(p) for p in want.details.get("poison_reads", ())}
    reads = [p for p in got.details.get("poison_reads", ()) if _what(p) not in k0_poison]
    if not varies:       # a plain mismatch: does the candidate's result depend on garbage?
        other = run(values, variant + 2)
        varies = other.ok and compare_runs(spec, got, other, label, (
            guard_pattern(variant), guard_pattern(variant + 2))) is not None
    if varies and device.diagnoses:
        diag = run(values, 0, diagnose=True)
        k0_reads = reference.diagnosed.get(label)
        if k0_reads is None:
            k0 = device.run(reference.k0, spec, poisoned(spec, values, reference.poison[label]),
                            guard_bytes=GUARD_BYTES,
                            guard_pattern=guard_pattern(0), diagnose=True)
            k0_reads = reference.diagnosed[label] = [_what(u) for u in
                                                     k0.details.get("undefined_reads", ())]
        reads += [u for u in diag.details.get("undefined_reads", ())
                  if _what(u) not in k0_reads]
    if not reads and (not varies or variant % 2):
        # nothing named, and the difference came from a serial schedule (a race)
        return replace(verdict, details=verdict.details | {"varies": varies}) if varies \
            else verdict
    why = ("; it reads what the launch leaves undefined: " + "; ".join(reads[:4])) if reads \
        else "; its result changes between runs with different garbage in undefined state"
    return replace(verdict, reason=verdict.reason + why,
                   details=verdict.details | {"undefined_reads": reads, "varies": varies})


def _what(read: str) -> str:
    """The register or location an undefined-read line names (K0 and the candidate
    read it by different instructions after an edit)."""
    return read.split(" read by ", 1)[0].removesuffix(":")
