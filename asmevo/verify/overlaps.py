"""Launches a check makes beyond its input sets: workgroups in several orders, and
buffers laid over each other where the kernel's contract allows it.

**Orders**: on one launch with more than one workgroup, the workgroups run one at a
time, each to its end, ascending, descending and in a seeded shuffle (a store into
another workgroup's data lands before or after that workgroup runs). The candidate
must give K0's result under each order.

**Overlaps**: unless a buffer is declared ``noalias`` (or ``.is_restrict``), a written
buffer is laid over another buffer (:data:`ALIAS_PAIRS` pairs at most, one element size
and a read-only other buffer first) at the same address, one element and 16 bytes
further, one and two workgroups' worth of its elements further, and one whole grid's
further: the shifts at which one work-item's load meets another's (or its own later)
store. Such a launch is
in the kernel's contract only where K0 gives one result in every schedule
(:data:`CONTRACT_RUNS`: lockstep, the waves of each workgroup one at a time both ways,
the workgroups ascending and descending); then the candidate, run once in lockstep,
must give it too. Overlaps outside the contract are listed, not run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asmevo.launch.spec import LaunchSpec
from asmevo.runtime.device import RunResult
from asmevo.verdict import Verdict
from asmevo.verify.differential import (GUARD_BYTES, compare_runs, conflict_verdict,
                                        new_conflicts)
from asmevo.verify.inputs import guard_pattern, poisoned

ALIAS_PAIRS = 2                 # (written buffer, other buffer) pairs laid over each other
ORDERS = ("ascending", "descending")    # and a seeded shuffle
CONTRACT_RUNS = ({}, {"variant": 1}, {"variant": 3}, {"order": "ascending"},
                 {"order": "descending"})


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
class Extra:
    """K0's runs under workgroup orders and overlapping buffers on one launch's first
    input set: ``orders`` (order -> K0's result) and ``aliases`` (each overlap in the
    contract, with K0's lockstep result)."""

    spec: LaunchSpec
    label: str
    values: dict
    poison: int
    orders: dict[str, RunResult] = field(default_factory=dict)
    aliases: list[tuple[Alias, RunResult]] = field(default_factory=list)

    @property
    def launches(self) -> int:
        return len(self.orders) + len(self.aliases)

    def plan(self) -> list[dict]:
        """The runs a candidate makes here: each order, each overlap (lockstep)."""
        return [{"order": o} for o in self.orders] + \
            [{"aliases": a.mapping} for a, _ in self.aliases]


def k0_runs(device, k0: bytes, ex: Extra, *, orders: bool, overlaps: str | None,
            restrict: frozenset[str], seed: int, failed, excluded: dict) -> None:
    """Fill ``ex`` with K0's runs: each order, each overlap (``overlaps``: "all" shifts
    or the "near" ones) in the contract (the rest in ``excluded``, with why); a run K0
    does not finish goes to ``failed(where, why)``."""
    want_orders = (*ORDERS, f"shuffle:{seed}") if orders and math.prod(ex.spec.grid) > 1 \
        else ()
    aliases = patterns(ex.spec, restrict, seed, near=overlaps == "near") if overlaps else []
    plan = [{"order": o} for o in want_orders] + \
        [{"aliases": a.mapping, **r} for a in aliases for r in CONTRACT_RUNS]
    got = many(device, k0, ex, plan)
    for order, res in zip(want_orders, got):
        if res.ok:
            ex.orders[order] = res
        else:
            failed(f"{ex.label}, workgroups {order}", f"{res.status}: {res.message}")
    n = len(CONTRACT_RUNS)
    for i, alias in enumerate(aliases):
        runs = got[len(want_orders) + n * i:len(want_orders) + n * (i + 1)]
        why = _outside_contract(ex.spec, runs)
        if why:
            excluded[f"overlap {alias.label} at {ex.label}"] = why
        else:
            ex.aliases.append((alias, runs[0]))


def patterns(spec: LaunchSpec, restrict: frozenset[str], seed: int, *,
             near: bool = False) -> list[Alias]:
    """The overlaps worth a launch (see the module docstring); ``near``: only the same
    address and one element further (a launch too costly for every shift)."""
    free = [a for a in spec.buffers if not a.noalias and a.name not in restrict]
    pairs = [(w, x) for w in free if w.written for x in free if x.name != w.name]
    keys = np.random.default_rng([seed, 0xA11A5]).random(len(pairs))

    def rank(i: int) -> tuple:
        w, x = pairs[i]
        return (w.nbytes // max(1, w.count) != x.nbytes // max(1, x.count), x.written, keys[i])

    out = []
    for i in sorted(range(len(pairs)), key=rank)[:ALIAS_PAIRS]:
        w, x = pairs[i]
        item = w.nbytes // max(1, w.count)
        block = math.prod(spec.block) * item
        offsets = {0, item} if near else \
            {0, item, 16, block, 2 * block, math.prod(spec.grid) * block}
        for off in sorted(offsets):
            out.append(Alias(w.name, x.name, off))
    return out


def _outside_contract(spec: LaunchSpec, runs: list[RunResult]) -> str | None:
    """Why K0's runs of one overlap put it outside the kernel's contract: K0 fails, or
    its result depends on the schedule (None: inside)."""
    for r in runs:
        if not r.ok:
            return f"K0 {r.status}s there ({' '.join(r.message.split())[:120]})"
    for r in runs[1:]:
        if compare_runs(spec, runs[0], r, "overlap") is not None:
            return "K0's result depends on the order its waves or workgroups run in"
    return None


def kwargs(ex: Extra, extra: dict) -> dict:
    """A run's device arguments: the launch's first input set, one guard fill for every
    run (a serial variant compared with a lockstep one must not differ in its guards)."""
    return dict(buffers=poisoned(ex.spec, ex.values, ex.poison), guard_bytes=GUARD_BYTES,
                guard_pattern=guard_pattern(0), variant=0) | extra


def many(device, code: bytes, ex: Extra, plan: list[dict],
         like: bytes | None = None) -> list[RunResult]:
    """The runs of ``plan`` on ``ex``'s launch, in one device pass where the device makes
    one (where the pass meets ``like``'s, it finishes as that one's), else one by one."""
    if len(plan) > 1:
        got = device.run_many(code, ex.spec, [kwargs(ex, p) for p in plan], like=like)
        if got is not None:
            return got
    out = []
    for p in plan:
        kw = kwargs(ex, p)
        out.append(device.run(code, ex.spec, kw.pop("buffers"), **kw))
    return out


def check(device, ex: Extra, k1: bytes, k0: bytes) -> tuple[Verdict, str] | None:
    """The candidate's runs on ``ex``'s launch against K0's: the first difference (and
    what the launch was), or None."""
    got = many(device, k1, ex, ex.plan(), like=k0)
    wants = [(ex.orders[o], f"workgroups {o}", f"workgroups run one at a time, {o}")
             for o in ex.orders]
    wants += [(want, f"overlap {a.label}", f"buffers overlapping: {a.label}")
              for a, want in ex.aliases]
    for (want, where, why), res in zip(wants, got):
        bad = _compare(ex, want, res, where)
        if bad is not None:
            return bad, why
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
