"""The launch-family members a check runs: chosen within a budget of K0's work, and
grouped by launch shape so that each group runs in one device pass.

The candidates come from :func:`asmevo.launch.family.candidates`, edge members first.
K0 runs each candidate's draw once (a member K0 faults on is reported, one the emulator
refuses is left out); a member is kept while the K0 work of the kept members stays
within the budget of its kind, each a multiple of K0's work at the size under check:
:data:`EDGE_BUDGET` for the smallest launch, the spec's other named sizes (each must fit
alone: a size larger than the one under check is where a bound clamped to it shows) and
the workgroups member, the same shared
out among the parameters for their series (a grid dimension's series, whose members
grow in workgroups, cannot starve a loop bound's, whose members are one workgroup
running longer), :data:`AROUND_BUDGET` per parameter for its short trip counts
around the size under check, and the family's ``budget`` for the rest; each at least
:data:`MIN_WORK`. Before a member is
launched, its waves times the fewest instructions a wave of K0 has run so far must fit
what is left (a launch of a million waves is never run to find out); a parameter's
series stops at its first member over the budget (its longer trip counts cost more).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from asmevo.errors import AsmevoError
from asmevo.launch.family import Member
from asmevo.launch.spec import FamilySpace, LaunchSpec, make_inputs
from asmevo.verify.differential import GUARD_BYTES, Reference, reference_runs
from asmevo.verify.errors import VerifyError
from asmevo.verify.inputs import guard_pattern, member_sets, poisoned

MAX_MEMBERS = 24                # family members a check runs beyond the size under check
GRID_SERIES = 2                 # members of a series whose launches have other grids than
                                # the smallest launch (each its own pass: more workgroups,
                                # not other trip counts per work-item)
EDGE_BUDGET = 4.0               # the edge members' K0 work together, x the size under check's
AROUND_BUDGET = 2.0             # per parameter, its short counts around the size under check
MIN_WORK = 20_000               # wave-instructions every budget allows at least (a size
                                # under check of one small workgroup would allow no member
                                # with a second workgroup)


@dataclass
class MemberCheck:
    """One family member a check runs: its spec and K0's cost there (wave-instructions)."""

    member: Member
    spec: LaunchSpec
    cost: float


@dataclass
class Group:
    """Members of one launch shape (block, LDS): one reference over all their input sets (labelled
    ``"<member>: <set>"``, each with its member's spec), run in one pass."""

    spec: LaunchSpec
    reference: Reference
    members: list[MemberCheck] = field(default_factory=list)

    def member_of(self, set_label: str) -> MemberCheck | None:
        label = set_label.split(": ", 1)[0]
        return next((m for m in self.members if m.member.label == label), None)


@dataclass
class Selection:
    """What choosing members left: the groups to run, and what was left out or failed."""

    groups: list[Group] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    k0_fails: dict[str, str] = field(default_factory=dict)

    @property
    def members(self) -> list[MemberCheck]:
        return [m for g in self.groups for m in g.members]

    def failed(self, where: str, why: str) -> None:
        """A launch K0 did not finish: K0's own fault or time-out (reported: the family
        may claim more than the kernel handles), or the emulator refusing what it cannot
        run exactly (left out, as any launch the device cannot make)."""
        if "unsupported:" in why:
            self.excluded[where] = f"the emulator refuses it: {why}"
        else:
            self.k0_fails[where] = why


def choose(device, k0: bytes, space: FamilySpace, main_cost: float, main_waves: int,
           seed: int, special: bool) -> Selection:
    """The members of ``space`` a check runs, grouped (see the module docstring)."""
    sel = Selection()
    names = space.family.names
    edge = max(EDGE_BUDGET * main_cost, MIN_WORK)
    left = {f"series {n}": edge / max(1, len(names)) for n in names}
    left |= {f"around {n}": max(AROUND_BUDGET * main_cost, MIN_WORK / max(1, len(names)))
             for n in names}
    left |= {"edge": edge, "workgroups": 2 * edge,
             "rest": max(space.family.budget * main_cost, MIN_WORK / 2)}
    per_wave = main_cost / max(1, main_waves)       # the fewest instructions a wave ran
    main_grid = space.resolve_base().grid
    stopped: set[str] = set()
    kept: list[MemberCheck] = []
    grids: dict[str, int] = {}
    for m in space.members(seed):
        if len(kept) >= MAX_MEMBERS:
            break
        pool = f"{m.kind} {m.param}" if m.kind in ("series", "around") else \
            m.kind if m.kind == "workgroups" else "edge" if m.edge else "rest"
        if pool in stopped:
            continue
        got = _measure(device, k0, space, m, left[pool], per_wave, sel)
        if got is None:
            if m.param:
                stopped.add(pool)
            continue
        spec, cost = got
        if m.param and kept and spec.grid not in (kept[0].spec.grid, main_grid):
            grids[m.param] = grids.get(m.param, 0) + 1
            if grids[m.param] > GRID_SERIES:
                sel.excluded[m.label] = f"{m.param} moves the grid: {GRID_SERIES} such " \
                                        "members are enough"
                stopped.add(pool)
                continue
        per_wave = min(per_wave, cost / max(1, _waves(spec)))
        left[pool] -= cost
        kept.append(MemberCheck(m, spec, cost))
    sel.groups = _groups(device, k0, kept, special, sel)
    return sel


def _waves(spec: LaunchSpec) -> int:
    return math.prod(spec.grid) * -(-math.prod(spec.block) // 64)


def _measure(device, k0: bytes, space: FamilySpace, m: Member, left: float,
             per_wave: float, sel: Selection) -> tuple[LaunchSpec, float] | None:
    """The member's spec and K0's cost on its draw, or None (and why, in ``sel``) where it
    does not resolve, is over what is ``left`` of its budget or K0 does not finish it."""
    try:
        spec = space.resolve(m)
        _check_emulable(device, spec)
    except AsmevoError as exc:
        sel.excluded[m.label] = exc.message
        return None
    if _waves(spec) * per_wave > left:
        sel.excluded[m.label] = f"over the budget: at least {_waves(spec) * per_wave:.0f} " \
                                f"wave-instructions, {max(0.0, left):.0f} left"
        return None
    fixed = {a.name: a.value for a in spec.args if a.kind == "scalar"}
    res = device.run(k0, spec, poisoned(spec, {**make_inputs(spec, 0), **fixed}),
                     guard_bytes=GUARD_BYTES, guard_pattern=guard_pattern(0))
    if not res.ok:
        sel.failed(m.label, f"{res.status}: {res.message}")
        return None
    cost = float(res.details.get("instructions", 0))
    if cost > left:
        sel.excluded[m.label] = f"over the budget: {cost:.0f} wave-instructions, " \
                                f"{max(0.0, left):.0f} left"
        return None
    return spec, cost


def _check_emulable(device, spec: LaunchSpec) -> None:
    if device.measured:
        return
    from asmevo.emu.run.launch import check_size
    check_size(spec)


def _shape(spec: LaunchSpec) -> tuple:
    """What launches of one pass share (:func:`asmevo.emu.run.batch.same_shape`): not the grid."""
    return (spec.block, spec.dynamic_lds, spec.dynamic_stack,
            tuple(a.name for a in spec.buffers))


def _groups(device, k0: bytes, kept: list[MemberCheck], special: bool,
            sel: Selection) -> list[Group]:
    """K0's reference runs of the kept members, one per launch shape."""
    shapes: dict[tuple, list[MemberCheck]] = {}
    for mc in kept:
        shapes.setdefault(_shape(mc.spec), []).append(mc)
    out = []
    n = 0
    for members in shapes.values():
        sets, specs = [], {}
        for mc in members:
            n += 1              # a series alternates draws and special runs; the rest draw
            for label, values in member_sets(mc.spec, n if mc.member.param else 0, special):
                key = f"{mc.member.label}: {label}"
                sets.append((key, values))
                specs[key] = mc.spec
        try:
            ref = reference_runs(device, k0, members[0].spec, sets=sets, specs=specs,
                                 approx_variants=())
        except VerifyError as exc:
            for mc in members:
                sel.failed(mc.member.label, exc.message)
            continue
        for label, why in ref.skipped.items():
            sel.failed(label, why)
        out.append(Group(members[0].spec, ref, members))
    return out
