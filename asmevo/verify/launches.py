"""Every launch a check covers, not one: launch-family members, workgroup orders and
overlapping buffers, with K0's results on each computed once (:class:`Coverage`).

The size under check keeps its full set of input sets (:mod:`asmevo.verify.inputs`).
Around it a check runs, on K0 once and on every candidate:

* **members** of the spec's launch family (:mod:`asmevo.launch.family`): the edge
  members first (the smallest launch; each parameter alone at trip counts 3 and
  2^k -/+ 1, the others smallest; two or more workgroups with a partial last one in
  every grid dimension), as many as fit an edge budget of K0 work
  (:data:`EDGE_BUDGET` times its work at the size under check; a parameter's series
  stops at its first member over it), then the rest (every parameter at 2^k -/+ 1, the
  other named sizes, seeded random ones) within the family's own ``budget``. Each gets
  two input sets (a draw, and special values in runs); members of one launch shape
  (grid, block, LDS) run in one device pass;
* **workgroup orders**: on the cheapest launch with more than one workgroup, the
  workgroups run one at a time in ascending, descending and a seeded shuffled
  order (a store into another workgroup's data lands before or after it runs);
  the candidate must give K0's result under each;
* **overlapping buffers**: unless a buffer is declared ``noalias`` in the spec or
  ``.is_restrict`` in the code object's metadata, a written buffer is laid over
  another one (two pairs at most) at the same address, 16 bytes further, one and two
  workgroups' worth of elements further and one whole grid's further, as a caller
  may pass them, on that launch and on the cheapest one-workgroup launch. Such a
  launch is in the kernel's contract only where K0 gives one result in lockstep, with
  the waves of each workgroup one at a time (both ways) and with the workgroups in
  ascending and descending order; then the candidate must give it too;
* **same-address lanes**: lanes of one wave storing different values to one address
  (verdict ``unspecified`` where K0 never does it), on every launch above.

What a check left out is said: members over the budget or too large to emulate,
launches K0 itself fails (reported, never held against a candidate), overlaps
outside the contract. The family's seed and members are in every equal verdict,
so :func:`coverage` with the same seed replays it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from asmevo.launch.spec import FamilySpace, LaunchSpec
from asmevo.runtime.device import Device
from asmevo.verdict import Verdict
from asmevo.verify import members as M, overlaps as O
from asmevo.verify.differential import Reference, differential, prepare as prepare_one

MEMBER_RUNS = 1                 # candidate runs per input set of a member (the size under
                                # check runs two, with other garbage in undefined state)
ORDER_MAX_WORKGROUPS = 256      # workgroups run one at a time: a bounded launch for it


@dataclass
class Coverage:
    """What every candidate of one K0 is checked against: K0 at the size under check
    (``main``), at the family members (``groups``), and under workgroup orders and
    overlaps (``extras``: the launches they run on)."""

    main: Reference
    groups: list[M.Group] = field(default_factory=list)
    extras: list[O.Extra] = field(default_factory=list)
    seed: int = 0
    family: str = ""
    derived: bool = False
    excluded: dict[str, str] = field(default_factory=dict)   # what was left out, and why
    k0_fails: dict[str, str] = field(default_factory=dict)   # launches K0 itself fails

    @property
    def k0(self) -> bytes:
        return self.main.k0

    @property
    def members(self) -> list[M.MemberCheck]:
        return [m for g in self.groups for m in g.members]

    def summary(self) -> dict:
        """The family part of an equal verdict's details: enough to replay the check."""
        out = {"seed": self.seed, "family": self.family, "declared": not self.derived,
               "members": [{"label": m.member.label, "why": m.member.why,
                            "params": m.member.params} for m in self.members],
               "orders": [], "aliases": []}
        for ex in self.extras:
            if ex.orders:
                out["orders_at"], out["orders"] = ex.label, list(ex.orders)
            out["aliases"] += [f"{a.label} at {ex.label}" for a, _ in ex.aliases]
        if self.excluded:
            out["excluded"] = dict(self.excluded)
        if self.k0_fails:
            out["k0_fails"] = dict(self.k0_fails)
        return out


def coverage(device: Device, k0: bytes, spec: LaunchSpec, main: Reference,
             space: FamilySpace | None, *, seed: int = 0, special: bool = True,
             restrict: frozenset[str] = frozenset()) -> Coverage:
    """K0's results on every launch a check of ``spec`` covers: ``main`` (its reference
    runs at the size under check), the family members of ``space`` within their budgets
    (:func:`asmevo.verify.members.choose`), and orders and overlaps
    (:mod:`asmevo.verify.overlaps`). ``restrict``: buffers the code object declares
    never to alias."""
    base = Coverage(main, seed=seed)
    sel = M.Selection()
    for label, why in main.skipped.items():
        sel.failed(f"{spec.size}, {label}", why)
    main_cost = _cost(main) or 1.0
    if space is not None:
        base.family, base.derived = space.family.describe(), space.family.derived
        sel = _merge(sel, M.choose(device, k0, space, main_cost, M._waves(spec), seed,
                                   special))
    base.groups = sel.groups
    base.extras = _extras(device, k0, base, spec, main_cost, seed, restrict, sel)
    base.excluded, base.k0_fails = sel.excluded, sel.k0_fails
    return base


def _merge(a: M.Selection, b: M.Selection) -> M.Selection:
    b.excluded = a.excluded | b.excluded
    b.k0_fails = a.k0_fails | b.k0_fails
    return b


def _cost(ref: Reference) -> float:
    """K0's wave-instructions on a launch (its costliest input set); 0 where unknown."""
    return float(max((r.details.get("instructions", 0) for r in ref.results.values()),
                     default=0))


def _extras(device, k0: bytes, base: Coverage, spec: LaunchSpec, main_cost: float, seed: int,
            restrict: frozenset[str], sel: M.Selection) -> list[O.Extra]:
    """Orders at the size under check where it has 2 to ORDER_MAX_WORKGROUPS workgroups
    (whole ones, usually: a store into another workgroup's elements there writes some;
    the cheapest such launch of the family has a last workgroup all but empty), else on
    the cheapest such launch; overlaps at every shift on that launch and on the cheapest
    one-workgroup launch, and the near shifts at the size under check (loops running as
    long as there)."""
    if not (device.orders or device.overlaps):
        return []
    cands = [(spec, base.main, main_cost, spec.size)]
    for g in base.groups:
        cands += [(m.spec, g.reference, m.cost, m.member.label) for m in g.members]
    many = [c for c in cands if 2 <= math.prod(c[0].grid) <= ORDER_MAX_WORKGROUPS]
    one = [c for c in cands if math.prod(c[0].grid) == 1]
    if not many:
        sel.excluded["workgroup orders"] = f"no launch with 2 to {ORDER_MAX_WORKGROUPS} " \
                                           "workgroups"
    # launch -> [orders there, overlaps there: every shift ("all") or the "near" ones]
    picks: dict[int, list] = {id(cands[0]): [cands[0], False, "near"]}

    def pick(c, orders: bool, overlaps: str | None) -> None:
        got = picks.setdefault(id(c), [c, False, None])
        got[1] = got[1] or orders
        got[2] = "all" if "all" in (got[2], overlaps) else got[2] or overlaps

    if many:
        pick(cands[0] if cands[0] in many else min(many, key=lambda c: c[2]), True, None)
        pick(min(many, key=lambda c: c[2]), False, "all")
    if one:
        pick(min(one, key=lambda c: c[2]), False, "all")
    picks = [tuple(v) for v in picks.values()]
    out = []
    for (lspec, ref, _, label), orders, overlaps in picks:
        set_label = next((lb for lb, _ in ref.sets if lb in ref.results
                          and ref.specs.get(lb, lspec) is lspec), None)   # its first set
        if set_label is None:
            continue
        ex = O.Extra(lspec, label, dict(ref.sets)[set_label], ref.poison[set_label])
        O.k0_runs(device, k0, ex, orders=orders and device.orders,
                  overlaps=overlaps if device.overlaps else None,
                  restrict=restrict, seed=seed, failed=sel.failed, excluded=sel.excluded)
        out.append(ex)
    return out


def prepare(device: Device, base: Coverage, spec: LaunchSpec, *, runs: int,
            barriers: bool) -> None:
    """Ahead of the first candidate, what the device keeps of K0's passes over the
    launches a check makes (:func:`asmevo.verify.differential.prepare`), for the size
    under check, each group of members and the orders and overlaps."""
    prepare_one(device, base.main, spec, runs=runs, barriers=barriers)
    for g in base.groups:
        prepare_one(device, g.reference, g.spec, runs=MEMBER_RUNS, barriers=False)
    for ex in base.extras:
        if device.batches and len(ex.plan()) > 1:
            device.prepare_like(base.k0, ex.spec, [O.kwargs(ex, p) for p in ex.plan()])


# -- a candidate -----------------------------------------------------------------------------

def check(device: Device, base: Coverage, k1: bytes, spec: LaunchSpec, *, runs: int = 2,
          barriers: bool = True) -> Verdict:
    """The candidate ``k1`` against ``base``: the size under check first, then each
    group of family members, then workgroup orders and overlaps. The first difference
    is the verdict (naming the launch); an equal verdict says what it covered."""
    v = differential(device, base.main, k1, spec, runs=runs, barriers=barriers)
    if not v.equal:
        return v
    count = v.details["launches"]
    for g in base.groups:
        mv = differential(device, g.reference, k1, g.spec, runs=MEMBER_RUNS, barriers=False)
        if not mv.equal:
            mc = g.member_of(mv.details.get("input_set", ""))
            return _at(mv, mc.member.label, mc.member.params, mc.member.why) if mc else mv
        count += mv.details["launches"]
    for ex in base.extras:
        bad = O.check(device, ex, k1, base.k0)
        if bad is not None:
            return _at(bad[0], ex.label, {}, bad[1])
        count += ex.launches
    return Verdict("equal", _covered(v, base, count),
                   v.details | {"launches": count, "family": base.summary()})


def _at(v: Verdict, label: str, params: dict, why: str) -> Verdict:
    return replace(v, reason=f"at {label} ({why}): {v.reason}",
                   details=v.details | {"member": label, "params": params})


def _covered(v: Verdict, base: Coverage, count: int) -> str:
    """An equal verdict's reason: how many launches, and of what kinds."""
    parts = [v.reason]
    ms = base.members
    if ms:
        labels = ", ".join(m.member.label for m in ms[:4])
        more = f" and {len(ms) - 4} more" if len(ms) > 4 else ""
        kind = "derived from the named sizes" if base.derived else "of the spec's family"
        parts.append(f"{len(ms)} launch-family members {kind} ({labels}{more})")
    elif not base.family or base.family == "one launch":
        parts.append("no launch family: one launch size only")
    for ex in base.extras:
        if ex.orders:
            parts.append(f"workgroups in {len(ex.orders)} orders at {ex.label}")
        if ex.aliases:
            parts.append(f"{len(ex.aliases)} overlapping-buffer launches at {ex.label}")
    if base.k0_fails:
        parts.append(f"K0 itself fails {len(base.k0_fails)} launch(es) (reported, not held "
                     f"against the candidate): {next(iter(base.k0_fails))}")
    return f"{count} launches: " + "; ".join(parts)
