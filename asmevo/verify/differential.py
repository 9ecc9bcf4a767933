"""Differential runs: is K' the same function as K0 on identical launches?

For every input set: fresh allocations, outputs poisoned, guards around every
buffer; K0 runs once (its result is cached per input set), K' runs twice. All
buffers are compared bitwise, inputs included, and the guards too. Two runs of
K' that differ make it nondeterministic (a race). On the first input set both
also run under member 1 of the approximate-instruction families (the
emulator's ``approx_variant``: v_rcp/v_exp/... within their ISA error bound,
another MFMA summation order), so a candidate equal to K0 only for the
correctly rounded member is not equal. The first difference found becomes
the verdict's reason: buffer, index, expected, got, and how many elements
differ.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from asmevo.runtime.device import Device, RunResult
from asmevo.verify.inputs import GUARD_BYTE, POISON_BYTE, input_sets, poisoned
from asmevo.verify.spec import LaunchSpec
from asmevo.verify.verdict import Verdict

GUARD_BYTES = 256


# Members of the approximate-instruction families (asmevo.emu.approx) checked beyond
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
    approx: dict[tuple[str, int], RunResult] = field(default_factory=dict)


def reference_runs(device: Device, k0: bytes, spec: LaunchSpec, *, seeds=(0, 1, 2),
                   special: bool = True, sets: list[tuple[str, dict]] | None = None,
                   approx_variants=APPROX_VARIANTS, approx_sets: int = APPROX_SETS) -> Reference:
    """K0 on every input set (``sets``, or the seeded draws plus special values), and
    under each member in ``approx_variants`` on the first ``approx_sets`` sets."""
    ref = Reference(sets if sets is not None else input_sets(spec, seeds, special))
    for label, values in ref.sets:
        res = device.run(k0, spec, poisoned(spec, values), guard_bytes=GUARD_BYTES,
                         guard_pattern=GUARD_BYTE)
        if res.ok:
            ref.results[label] = res
        else:
            ref.skipped[label] = f"{res.status}: {res.message}"
    if not ref.results:
        raise ValueError(f"K0 itself fails on every input set: {ref.skipped}")
    if getattr(device, "measured", False):
        approx_variants = ()      # a GPU is one fixed member of every family
    labels = [lb for lb, _ in ref.sets if lb in ref.results][:approx_sets]
    values_of = dict(ref.sets)
    for label in labels:
        for member in approx_variants:
            res = device.run(k0, spec, poisoned(spec, values_of[label]), guard_bytes=GUARD_BYTES,
                             guard_pattern=GUARD_BYTE, approx_variant=member)
            if res.ok:
                ref.approx[(label, member)] = res
            else:
                ref.skipped[f"{label} (approximate member {member})"] = \
                    f"{res.status}: {res.message}"
    return ref


def _show(arr: np.ndarray, i: int) -> str:
    """A value with its bit pattern, so NaN payloads and -0 are visible."""
    v = arr[i].item()
    if arr.dtype.kind == "f":
        bits = arr.view(f"u{arr.dtype.itemsize}")[i]
        return f"{v!r} (0x{int(bits):0{arr.dtype.itemsize * 2}x})"
    return repr(v)


def compare_runs(spec: LaunchSpec, want: RunResult, got: RunResult, label: str) -> Verdict | None:
    """None when ``got`` equals ``want`` bit for bit, else a mismatch verdict."""
    for a in spec.buffers:
        w, g = want.buffers[a.name], got.buffers[a.name]
        for side, wg, gg in (("before", w.guard_before, g.guard_before),
                             ("after", w.guard_after, g.guard_after)):
            if wg != gg:
                off = next(i for i, (x, y) in enumerate(zip(wg, gg)) if x != y)
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
            what = "output" if a.output else "input (must stay unchanged)"
            poison = bool(a.output and (gv.view(np.uint8).reshape(gv.size, -1)[i] == POISON_BYTE).all())
            reason = (f"{what} {a.name}[{i}]: expected {_show(wv, i)}, got {_show(gv, i)}"
                      f"{' (still the poison pattern: never written)' if poison else ''}; "
                      f"{diff.size} of {wv.size} elements differ (input set {label})")
            return Verdict("mismatch", reason, {
                "input_set": label, "buffer": a.name, "index": i, "expected": _show(wv, i),
                "got": _show(gv, i), "count": int(diff.size), "never_written": poison})
    return None


def _run_verdict(res: RunResult, label: str) -> Verdict:
    status = res.status if res.status in ("fault", "timeout", "unsupported") else "crash"
    return Verdict(status, f"{res.message} (input set {label})",
                   dict(res.details) | {"input_set": label})


def differential(device: Device, reference: Reference, k1: bytes, spec: LaunchSpec, *,
                 runs: int = 2, barriers: bool = True) -> Verdict:
    """Compare candidate ``k1`` against K0's cached reference runs.

    ``barriers``: whether the candidate synchronizes waves (then the serial
    variants that expose races are worth their cost)."""
    for j, (label, values) in enumerate(reference.sets):
        want = reference.results.get(label)
        if want is None:
            continue
        first: RunResult | None = None
        # Runs after the first are variants with other garbage in uninitialised
        # registers; on the first input set of a kernel with barriers they also run
        # waves one by one between barriers, lowest and then highest wave first
        # (slow, so once). A race or an uninitialised read then shows as a difference.
        variants = [2 * r for r in range(runs)]
        if j == 0 and runs > 1 and barriers:
            variants = [0, 1, 3] + variants[2:]
        for r, variant in enumerate(variants):
            got = device.run(k1, spec, poisoned(spec, values), guard_bytes=GUARD_BYTES,
                             guard_pattern=GUARD_BYTE, variant=variant)
            if not got.ok:
                return _run_verdict(got, label)
            if first is None:
                first = got
                bad = compare_runs(spec, want, got, label)
                if bad is not None:
                    return bad
            elif (d := compare_runs(spec, first, got, label)) is not None:
                return Verdict("nondeterministic", "two runs on the same inputs differ (a race "
                               "between waves or a read of an uninitialised register): "
                               f"{d.reason}", d.details | {"run": r})
    verdict = _approx_members(device, reference, k1, spec)
    if verdict is not None:
        return verdict
    checked = [lb for lb, _ in reference.sets if lb in reference.results]
    members = sorted({m for _, m in reference.approx})
    return Verdict("equal", f"bit-equal on {len(checked)} input sets x {runs} runs"
                   + (f" and approximate-instruction members {members}" if members else ""),
                   {"input_sets": checked, "skipped": reference.skipped, "runs": runs,
                    "approx_variants": members})


def _approx_members(device: Device, reference: Reference, k1: bytes,
                    spec: LaunchSpec) -> Verdict | None:
    """K' against K0 under the other members of the approximate-instruction families:
    a candidate that computes an approximate instruction's result another way (exact
    math for v_rcp, another summation for MFMA) differs here even when member 0 agrees."""
    values_of = dict(reference.sets)
    for (label, member), want in reference.approx.items():
        got = device.run(k1, spec, poisoned(spec, values_of[label]), guard_bytes=GUARD_BYTES,
                         guard_pattern=GUARD_BYTE, approx_variant=member)
        where = f"{label}, approximate-instruction member {member}"
        if not got.ok:
            return _run_verdict(got, where)
        bad = compare_runs(spec, want, got, where)
        if bad is not None:
            return Verdict("mismatch", f"{bad.reason}; K0 and the candidate agree only for "
                           "some members of an approximate instruction's family (the "
                           "candidate does not compute it the way K0 does)",
                           bad.details | {"approx_variant": member})
    return None
