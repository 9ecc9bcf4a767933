"""Every launch a check covers, not one: launch-family members, workgroup orders and
overlapping buffers, with K0's results on each computed once (:class:`Baseline`).

The size under check keeps its full set of input sets (:mod:`asmevo.verify.inputs`).
Around it a check runs, on K0 once and on every candidate:

* **members** of the spec's launch family (:mod:`asmevo.launch.family`), edge
  members first (the smallest launch, trip counts 2^k -/+ 1, two or more
  workgroups with a partial last one in every grid dimension), then long odd trip
  counts, the other named sizes and seeded random ones, as many as fit the
  family's budget: their K0 work (wave-instructions) at most ``budget`` times the
  size under check's. Each gets two input sets (a draw, and special values in runs);
* **workgroup orders**: on the cheapest launch with more than one workgroup, the
  workgroups run one at a time in ascending, descending and a seeded shuffled
  order (a store into another workgroup's data lands before or after it runs);
  the candidate must give K0's result under each;
* **overlapping buffers**: unless a buffer is declared ``noalias`` in the spec or
  ``.is_restrict`` in the code object's metadata, a written buffer is laid over
  another one (the same address, and 16 bytes further), as a caller may pass
  them. Such a launch is in the kernel's contract only where K0 gives one result
  in every workgroup order; then the candidate must give it too.

What a check left out is said: members over the budget or too large to emulate,
launches K0 itself fails (reported, never held against a candidate), overlaps
outside the contract. The family's seed and members are in every equal verdict,
so :func:`baseline` with the same seed replays it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from asmevo.errors import AsmevoError
from asmevo.launch.family import Member
from asmevo.launch.spec import FamilySpace, LaunchSpec
from asmevo.runtime.device import Device, RunResult
from asmevo.verdict import Verdict
from asmevo.verify.differential import (GUARD_BYTES, Reference, compare_runs, conflict_verdict,
                                        differential, new_conflicts, prepare as prepare_one,
                                        reference_runs)
from asmevo.verify.errors import VerifyError
from asmevo.verify.inputs import guard_pattern, member_sets, poisoned

MAX_MEMBERS = 8                 # family members a check runs beyond the size under check
MEMBER_RUNS = 1                 # candidate runs per input set of a member (the size under
                                # check runs two, with other garbage in undefined state)
EDGE = ("the smallest launch", "trip counts 2^k - 1", "trip counts 2^k + 1",
        "2+ workgroups")        # member reasons (prefixes) kept whatever the budget left
ORDER_MAX_WORKGROUPS = 256      # workgroups run one at a time: a bounded launch for it
ALIAS_SHIFT = 16                # bytes: a shift that keeps 16-byte alignment
ALIAS_PAIRS = 2                 # (written buffer, other buffer) pairs laid over each other


@dataclass(frozen=True)
class Alias:
    """``buffer`` laid ``offset`` bytes into ``base`` instead of an allocation of its own."""

    buffer: str
    base: str
    offset: int = 0

    @property
    def label(self) -> str:
        return f"{self.buffer}={self.base}" + (f"+{self.offset}B" if self.offset else "")

    @property
    def mapping(self) -> dict:
        return {self.buffer: (self.base, self.offset)}


@dataclass
class MemberCheck:
    """K0 at one family member: its spec, reference runs and cost (wave-instructions)."""

    member: Member
    spec: LaunchSpec
    reference: Reference
    cost: float


@dataclass
class Extra:
    """K0's runs under workgroup orders and overlapping buffers, on one launch's first
    input set: ``orders`` (order -> K0's result) and ``aliases`` (each overlap in the
    contract: one result in every workgroup order, this one)."""

    spec: LaunchSpec
    label: str
    values: dict
    poison: int
    orders: dict[str, RunResult] = field(default_factory=dict)
    aliases: list[tuple[Alias, RunResult]] = field(default_factory=list)


@dataclass
class Baseline:
    """What every candidate of one K0 is checked against: K0 at the size under check
    (``main``), at the family members, under workgroup orders and overlaps."""

    main: Reference
    members: list[MemberCheck] = field(default_factory=list)
    extra: Extra | None = None
    seed: int = 0
    family: str = ""
    derived: bool = False
    excluded: dict[str, str] = field(default_factory=dict)   # what was left out, and why
    k0_fails: dict[str, str] = field(default_factory=dict)   # launches K0 itself fails

    @property
    def k0(self) -> bytes:
        return self.main.k0

    def summary(self) -> dict:
        """The family part of an equal verdict's details: enough to replay the check."""
        out = {"seed": self.seed, "family": self.family, "declared": not self.derived,
               "members": [{"label": m.member.label, "why": m.member.why,
                            "params": m.member.params} for m in self.members]}
        if self.extra is not None:
            out["orders_at"] = self.extra.label
            out["orders"] = list(self.extra.orders)
            out["aliases"] = [a.label for a, _ in self.extra.aliases]
        if self.excluded:
            out["excluded"] = dict(self.excluded)
        if self.k0_fails:
            out["k0_fails"] = dict(self.k0_fails)
        return out


def baseline(device: Device, k0: bytes, spec: LaunchSpec, main: Reference,
             space: FamilySpace | None, *, seed: int = 0, special: bool = True,
             restrict: frozenset[str] = frozenset()) -> Baseline:
    """K0's results on every launch a check of ``spec`` covers: ``main`` (its
    reference runs at the size under check) and, from ``space``, the family members
    within the budget, then orders and overlaps on the cheapest launch with more than
    one workgroup. ``restrict``: buffers the code object declares never to alias."""
    base = Baseline(main, seed=seed)
    for label, why in main.skipped.items():
        _k0_failed(base, f"{spec.size}, {label}", why)
    main_cost = _cost(main) or 1.0
    if space is not None:
        base.family, base.derived = space.family.describe(), space.family.derived
        _add_members(device, k0, base, space, main_cost, seed, special)
    launches = [(spec, main, main_cost, spec.size)] + \
        [(m.spec, m.reference, m.cost, m.member.label) for m in base.members]
    base.extra = _extra(device, k0, base, launches, seed, restrict)
    return base


def _k0_failed(base: Baseline, where: str, why: str) -> None:
    """A launch K0 did not finish: K0's own fault or time-out (reported: the family may
    claim more than the kernel handles), or the emulator refusing what it cannot run
    exactly (left out, as any launch the device cannot make)."""
    if "unsupported:" in why:
        base.excluded[where] = f"the emulator refuses it: {why}"
    else:
        base.k0_fails[where] = why


def _cost(ref: Reference) -> float:
    """K0's wave-instructions on a launch (its costliest input set); 0 where unknown."""
    return float(max((r.details.get("instructions", 0) for r in ref.results.values()),
                     default=0))


def _add_members(device, k0: bytes, base: Baseline, space: FamilySpace, main_cost: float,
                 seed: int, special: bool) -> None:
    budget = space.family.budget * main_cost
    spent = 0.0
    for j, m in enumerate(space.members(seed)):
        edge = m.why.startswith(EDGE)
        if len(base.members) >= MAX_MEMBERS or (not edge and spent >= budget):
            break
        try:
            mspec = space.resolve(m)
            _check_emulable(device, mspec)
            ref = reference_runs(device, k0, mspec, sets=member_sets(mspec, j, special),
                                 approx_variants=())
        except VerifyError as exc:
            _k0_failed(base, m.label, exc.message)
            continue
        except AsmevoError as exc:
            base.excluded[m.label] = exc.message
            continue
        for label, why in ref.skipped.items():
            _k0_failed(base, f"{m.label}, {label}", why)
        cost = _cost(ref)
        if (edge and cost <= budget) or spent + cost <= budget:
            spent += cost
            base.members.append(MemberCheck(m, mspec, ref, cost))
        else:
            base.excluded[m.label] = (f"over the budget: {cost:.0f} wave-instructions, "
                                      f"{max(0.0, budget - spent):.0f} left")


def _check_emulable(device, spec: LaunchSpec) -> None:
    if device.measured:
        return
    from asmevo.emu.launch import check_size
    check_size(spec)


def _extra(device, k0: bytes, base: Baseline, launches: list, seed: int,
           restrict: frozenset[str]) -> Extra | None:
    """K0 under workgroup orders and overlapping buffers on the cheapest launch with
    more than one workgroup (the most grid dimensions above one first)."""
    if not (device.orders or device.overlaps):
        return None
    fit = [x for x in launches if 2 <= math.prod(x[0].grid) <= ORDER_MAX_WORKGROUPS
           and x[1].results]
    if not fit:
        base.excluded["workgroup orders"] = "no launch with 2 to " \
            f"{ORDER_MAX_WORKGROUPS} workgroups"
        fit = [x for x in launches if x[1].results][:1]
        if not fit:
            return None
    spec, ref, _, label = min(fit, key=lambda x: (x[2], -sum(g > 1 for g in x[0].grid)))
    set_label = next(lb for lb, _ in ref.sets if lb in ref.results)
    ex = Extra(spec, label, dict(ref.sets)[set_label], ref.poison[set_label])
    orders = ("ascending", "descending", f"shuffle:{seed}") \
        if device.orders and math.prod(spec.grid) >= 2 else ()
    aliases = _aliases(spec, restrict, seed) if device.overlaps else []
    # K0: each order; each overlap in lockstep and in two orders (is it in the contract?)
    plan = [{"order": o} for o in orders] + \
        [{"aliases": a.mapping, "order": o} for a in aliases
         for o in (None, "ascending", "descending")]
    got = _many(device, k0, ex, plan)
    for order, res in zip(orders, got):
        if res.ok:
            ex.orders[order] = res
        else:
            _k0_failed(base, f"{label}, workgroups {order}", f"{res.status}: {res.message}")
    for i, alias in enumerate(aliases):
        runs = got[len(orders) + 3 * i:len(orders) + 3 * i + 3]
        why = _outside_contract(spec, runs)
        if why:
            base.excluded[f"overlap {alias.label}"] = why
        else:
            ex.aliases.append((alias, runs[0]))
    return ex


def _candidate_plan(ex: Extra) -> list[dict]:
    """The runs a candidate makes on ``ex``'s launch: each order, each overlap."""
    return [{"order": o} for o in ex.orders] + [{"aliases": a.mapping} for a, _ in ex.aliases]


def _kwargs(ex: Extra, extra: dict) -> dict:
    return dict(buffers=poisoned(ex.spec, ex.values, ex.poison), guard_bytes=GUARD_BYTES,
                guard_pattern=guard_pattern(0), variant=0, **extra)


def _many(device, code: bytes, ex: Extra, plan: list[dict],
          like: bytes | None = None) -> list[RunResult]:
    """The runs of ``plan`` on ``ex``'s launch, in one device pass where the device makes
    one (where the pass meets ``like``'s, it finishes as that one's), else one by one."""
    many = getattr(device, "run_many", None)
    if many is not None and len(plan) > 1:
        kws = [_kwargs(ex, p) for p in plan]
        got = many(code, ex.spec, kws, like=like) if like is not None else \
            many(code, ex.spec, kws)
        if got is not None:
            return got
    out = []
    for p in plan:
        kw = _kwargs(ex, p)
        out.append(device.run(code, ex.spec, kw.pop("buffers"), **kw))
    return out


def _aliases(spec: LaunchSpec, restrict: frozenset[str], seed: int) -> list[Alias]:
    """Overlaps worth a launch: each (written buffer, other buffer) pair that neither
    the spec (``noalias``) nor the code object (``restrict``) rules out, buffers of
    one element size first, at most :data:`ALIAS_PAIRS` pairs (seeded among equals),
    each laid at the same address and 16 bytes further."""
    free = [a for a in spec.buffers if not a.noalias and a.name not in restrict]
    pairs = [(w, x) for w in free if w.written for x in free if x.name != w.name]
    rng = np.random.default_rng([seed, 0xA11A5])
    keys = rng.random(len(pairs))
    ranked = sorted(range(len(pairs)), key=lambda i: (
        pairs[i][0].nbytes // max(1, pairs[i][0].count) != pairs[i][1].nbytes
        // max(1, pairs[i][1].count), pairs[i][1].written, keys[i]))
    out = []
    for i in ranked[:ALIAS_PAIRS]:
        w, x = pairs[i]
        out += [Alias(w.name, x.name, 0), Alias(w.name, x.name, ALIAS_SHIFT)]
    return out


def _outside_contract(spec: LaunchSpec, runs: list[RunResult]) -> str | None:
    """Why K0's runs of one overlap put it outside the kernel's contract: K0 fails, or
    its result depends on the order its workgroups run in (None: inside)."""
    for r in runs:
        if not r.ok:
            return f"K0 {r.status}s there ({' '.join(r.message.split())[:120]})"
    for r in runs[1:]:
        if compare_runs(spec, runs[0], r, "overlap") is not None:
            return "K0's result depends on the order its workgroups run in"
    return None


def prepare(device: Device, base: Baseline, spec: LaunchSpec, *, runs: int,
            barriers: bool) -> None:
    """Ahead of the first candidate, what the device keeps of K0's passes over the
    launches a check makes (:func:`asmevo.verify.differential.prepare`), for the size
    under check and each member."""
    prepare_one(device, base.main, spec, runs=runs, barriers=barriers)
    for mc in base.members:
        prepare_one(device, mc.reference, mc.spec, runs=MEMBER_RUNS, barriers=False)
    ex = base.extra
    ahead = getattr(device, "prepare_like", None)
    if ex is not None and ahead is not None and (plan := _candidate_plan(ex)):
        ahead(base.k0, ex.spec, [_kwargs(ex, p) for p in plan])


# -- a candidate -----------------------------------------------------------------------------

def check(device: Device, base: Baseline, k1: bytes, spec: LaunchSpec, *, runs: int = 2,
          barriers: bool = True) -> Verdict:
    """The candidate ``k1`` against ``base``: the size under check first, then each
    family member, then workgroup orders and overlaps. The first difference is the
    verdict (naming the launch); an equal verdict says what it covered."""
    v = differential(device, base.main, k1, spec, runs=runs, barriers=barriers)
    if not v.equal:
        return v
    count = v.details["launches"]
    for mc in base.members:
        mv = differential(device, mc.reference, k1, mc.spec, runs=MEMBER_RUNS, barriers=False)
        if not mv.equal:
            return _at(mv, mc.member.label, mc.member.params, mc.member.why)
        count += mv.details["launches"]
    if base.extra is not None:
        bad = _check_extra(device, base.extra, k1, base.k0)
        if bad is not None:
            return bad
        count += len(base.extra.orders) + len(base.extra.aliases)
    return Verdict("equal", _covered(v, base, count),
                   v.details | {"launches": count, "family": base.summary()})


def _at(v: Verdict, label: str, params: dict, why: str) -> Verdict:
    return replace(v, reason=f"at {label} ({why}): {v.reason}",
                   details=v.details | {"member": label, "params": params})


def _check_extra(device, ex: Extra, k1: bytes, k0: bytes) -> Verdict | None:
    plan = _candidate_plan(ex)
    got = _many(device, k1, ex, plan, like=k0)
    wants = [(ex.orders[o], f"workgroups {o}", f"workgroups run one at a time, {o}")
             for o in ex.orders]
    wants += [(want, f"overlap {a.label}", f"buffers overlapping: {a.label}")
              for a, want in ex.aliases]
    for (want, where, why), res in zip(wants, got):
        bad = _compare(ex, want, res, where)
        if bad is not None:
            return _at(bad, ex.label, {}, why)
    return None


def _compare(ex: Extra, want: RunResult, got: RunResult, where: str) -> Verdict | None:
    if not got.ok:
        status = got.status if got.status in ("fault", "timeout", "unsupported") else "crash"
        return Verdict(status, f"{got.message} ({where})", dict(got.details))
    bad = compare_runs(ex.spec, want, got, where, poison=ex.poison)
    if bad is not None:
        return bad
    conflicts = new_conflicts(got, want)
    return conflict_verdict(got, where, conflicts) if conflicts else None


def _covered(v: Verdict, base: Baseline, count: int) -> str:
    """An equal verdict's reason: how many launches, and of what kinds."""
    parts = [v.reason]
    if base.members:
        labels = ", ".join(m.member.label for m in base.members[:4])
        more = f" and {len(base.members) - 4} more" if len(base.members) > 4 else ""
        kind = "derived from the named sizes" if base.derived else "of the spec's family"
        parts.append(f"{len(base.members)} launch-family members {kind} ({labels}{more})")
    elif not base.family or base.family == "one launch":
        parts.append("no launch family: one launch size only")
    ex = base.extra
    if ex is not None and ex.orders:
        parts.append(f"workgroups in {len(ex.orders)} orders at {ex.label}")
    if ex is not None and ex.aliases:
        parts.append("overlapping buffers " + ", ".join(a.label for a, _ in ex.aliases))
    if base.k0_fails:
        parts.append(f"K0 itself fails {len(base.k0_fails)} launch(es) (reported, not held "
                     f"against the candidate): {next(iter(base.k0_fails))}")
    return f"{count} launches: " + "; ".join(parts)
