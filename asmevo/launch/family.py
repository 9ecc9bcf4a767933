"""Launch families: the space of launches a kernel is used with, and the members
verification draws from it.

One launch shows a candidate equal at one size, one grid, one set of trip counts.
The transformations that make kernels faster (unrolling, pipelining, hoisting)
change exactly what that launch never varies, so a spec says which launches its
kernel is used with, as ranges of its size parameters::

    [family]
    M = { low = 1, high = 4096 }                # a range
    K = { low = 64, high = 8192, multiple = 64 }  # only multiples of 64
    N = [16, 48, 100]                           # a list
    where = ["M * N <= 1048576"]                # constraints over the parameters
    members = 2                                 # seeded random members (default 2)
    budget = 2.0                                # their K0 work, x the size under check's

Every expression of the spec that names a parameter (grid, block, counts,
scalar values, domains) is evaluated again at each member, so a scalar that
follows a parameter follows it there too. A parameter the family does not name
keeps the value of the size under check.

:func:`candidates` lists, in priority order, the members worth running: the
*edge* members first (the smallest launch; the spec's other named sizes; two or more
workgroups with a partial last one in every grid dimension a parameter moves; each
parameter alone at short trip counts (3, 5, 7, 9, 15, 17) with the others as at the
size under check (a bug that needs two parameters away from 1 shows there); each
parameter alone at trip counts 3 and 2^k -/+ 1, the others at their smallest: odd
remainders for every power-of-two unroll factor and loop stride), then every
parameter at 2^k -/+ 1 at once and seeded random members. Which of them verification
runs within its budgets is decided where K0's cost on each is known
(:mod:`asmevo.verify.members`). Everything here is a pure function of the spec and
the seed, so a verdict that records the seed can be replayed.

A spec without ``[family]`` gets one derived from what it declares: each
parameter that differs between its named sizes ranges between its smallest and
largest value there (:func:`derived`).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from asmevo.launch.errors import SpecError
from asmevo.launch.expr import err, predicate, short

RESERVED = ("where", "members", "budget")
MAX_LIST = 256
DEFAULT_BUDGET = 2.0       # members' K0 work, x the size under check's (one launch each)
MAX_SEARCH = 4000          # parameter vectors a search for one edge member looks at
PROXY_FACTOR = 8           # a candidate whose parameter product exceeds the size under
                           # check's by more than this (times the budget) is not listed


@dataclass(frozen=True)
class Range:
    """The values one size parameter takes: a list, or the multiples of ``multiple``
    in [low, high]."""

    name: str
    low: int
    high: int
    multiple: int = 1
    values: tuple[int, ...] = ()

    def __contains__(self, v: int) -> bool:
        if self.values:
            return v in self.values
        return self.low <= v <= self.high and v % self.multiple == 0

    def describe(self) -> str:
        if self.values:
            return f"{self.name} in {list(self.values)}"
        step = f", multiples of {self.multiple}" if self.multiple > 1 else ""
        return f"{self.name} in [{self.low}, {self.high}{step}]"

    def pool(self, base: int | None = None) -> tuple[int, ...]:
        """The values worth trying, ascending: the ends, the first few, and around
        every power of two the forms 2^k - 1, 2^k, 2^k + 1 (in units of ``multiple``):
        trip counts whose remainder is nonzero, or zero, for every unroll factor."""
        if self.values:
            return tuple(sorted(set(self.values)))
        m = self.multiple
        tl, th = -(-self.low // m), self.high // m
        ts = {tl, th, min(th, tl + 1), min(th, tl + 2)}
        for j in range(1, 63):
            p = 1 << j
            if p - 1 > th:
                break
            ts |= {t for t in (p - 1, p, p + 1) if tl <= t <= th}
        if base is not None and base in self:
            ts.add(base // m)
        return tuple(sorted(t * m for t in ts))


@dataclass(frozen=True)
class Family:
    ranges: tuple[Range, ...] = ()
    where: tuple[str, ...] = ()
    members: int = 2
    budget: float = DEFAULT_BUDGET
    derived: bool = False        # not declared: from the spec's named sizes

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.ranges)

    def outside(self, params: dict) -> str | None:
        """Why ``params`` is not a launch of the family (None: it is one)."""
        for r in self.ranges:
            if params.get(r.name) not in r:
                return f"{r.name} = {params.get(r.name)} is not in {r.describe()}"
        for i, w in enumerate(self.where):
            if not predicate(w, params, where=f"family.where[{i}]"):
                return f"{w!r} does not hold"
        return None

    def describe(self) -> str:
        parts = [r.describe() for r in self.ranges] + [f"where {w}" for w in self.where]
        return "; ".join(parts) if parts else "one launch"


@dataclass(frozen=True)
class Member:
    """One launch of a family: its parameter values and why it was chosen."""

    values: tuple[tuple[str, int], ...]
    why: str
    name: str = field(default="", compare=False)    # a named size it equals, if any
    kind: str = field(default="", compare=False)    # smallest, named, workgroups, around,
                                                    # series, all, random: see candidates()
    param: str = field(default="", compare=False)   # a series' parameter

    @property
    def edge(self) -> bool:
        """One of the launches every check should run (within the edge budget)."""
        return self.kind in ("smallest", "named", "series", "around", "workgroups")

    @property
    def params(self) -> dict[str, int]:
        return dict(self.values)

    @property
    def label(self) -> str:
        return self.name or ",".join(f"{k}={v}" for k, v in self.values)


# -- parsing ---------------------------------------------------------------------------------

def parse(raw, params: dict[str, int]) -> Family:
    """The ``[family]`` table of a spec, checked against its ``params``."""
    if not isinstance(raw, dict):
        raise err("family", f"must be a table, got {short(raw)}")
    ranges = []
    for name, v in raw.items():
        if name in RESERVED:
            continue
        if name not in params:
            known = ", ".join(params) or "none"
            raise err(f"family.{name}", f"not a size parameter of [params] (they are: {known})")
        ranges.append(_range(name, v, f"family.{name}"))
    if not ranges:
        raise err("family", "names no size parameter (give at least one range or list)")
    where = raw.get("where", [])
    if not isinstance(where, list) or not all(isinstance(w, str) for w in where):
        raise err("family.where", f"must be a list of constraint strings, got {short(where)}")
    for i, w in enumerate(where):
        predicate(w, params, where=f"family.where[{i}]")      # syntax and names, now
    members = raw.get("members", 2)
    if isinstance(members, bool) or not isinstance(members, int) or not 0 <= members <= 64:
        raise err("family.members", f"must be an integer in [0, 64], got {short(members)}")
    budget = raw.get("budget", DEFAULT_BUDGET)
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or \
            not 0 < budget <= 100 or not math.isfinite(budget):
        raise err("family.budget", f"must be a number in (0, 100], got {short(budget)}")
    return Family(tuple(ranges), tuple(where), members, float(budget))


def _range(name: str, v, where: str) -> Range:
    if isinstance(v, list):
        if not v or len(v) > MAX_LIST:
            raise err(where, f"a list needs 1 to {MAX_LIST} values, got {len(v)}")
        vals = tuple(_int(x, f"{where}[{i}]") for i, x in enumerate(v))
        return Range(name, min(vals), max(vals), values=vals)
    if not isinstance(v, dict):
        raise err(where, f"expected a list of values or {{low = .., high = ..}}, got {short(v)}")
    unknown = sorted(set(v) - {"low", "high", "multiple"})
    if unknown:
        raise err(where, f"unknown key(s) {', '.join(unknown)} (a range has low, high, multiple)")
    if "low" not in v or "high" not in v:
        raise err(where, "a range needs both low and high")
    lo, hi = _int(v["low"], f"{where}.low"), _int(v["high"], f"{where}.high")
    m = _int(v.get("multiple", 1), f"{where}.multiple")
    if m < 1:
        raise err(f"{where}.multiple", f"must be >= 1, got {m}")
    if lo > hi:
        raise err(where, f"empty range: low {lo} is above high {hi}")
    if -(-lo // m) > hi // m:
        raise err(where, f"empty range: no multiple of {m} in [{lo}, {hi}]")
    return Range(name, lo, hi, m)


def _int(x, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or abs(x) > 2 ** 62:
        raise err(where, f"must be an integer, got {short(x)}")
    return x


def derived(params: dict[str, int], sizes: dict[str, dict[str, int]]) -> Family:
    """The family a spec without ``[family]`` implies: each parameter that differs
    between its named sizes, between its smallest and largest value there."""
    seen: dict[str, set[int]] = {}
    for table in [params, *sizes.values()]:
        for k, v in {**params, **table}.items():
            seen.setdefault(k, set()).add(v)
    ranges = tuple(Range(k, min(vs), max(vs)) for k, vs in seen.items() if len(vs) > 1)
    return Family(ranges, derived=True)


# -- members ---------------------------------------------------------------------------------

Grid = Callable[[dict], "tuple[int, ...] | None"]


def candidates(family: Family, base: dict[str, int], seed: int, grid: Grid, *,
               named: dict[str, dict[str, int]] | None = None,
               resolves: Callable[[dict], bool] | None = None) -> list[Member]:
    """The members worth running, edge members first (see the module docstring), each
    inside the family, with a grid (``grid`` gives its workgroup counts, None where it
    does not evaluate) and resolvable (``resolves``: the whole launch within every
    limit), not ``base`` itself, none twice."""
    if not family.ranges:
        return []
    pools = {r.name: r.pool(base.get(r.name)) for r in family.ranges}
    s = _Search(family, base, pools, grid, resolves or (lambda full: True))
    out: list[Member] = []
    seen = {s.key(base)}

    def add(values: dict | None, why: str, kind: str, name: str = "", param: str = "") -> None:
        if values is None:
            return
        k = s.key(values)
        if k in seen or not s.cheap(values):
            return
        seen.add(k)
        out.append(Member(tuple((n, values[n]) for n in family.names), why, name, kind, param))

    add(s.nearest({n: 0 for n in pools}), "the smallest launch", "smallest")
    for name, vals in (named or {}).items():        # the spec's own sizes (where emulable)
        full = {**base, **vals}
        if family.outside(full) is None and s.resolves(full):
            add({n: full[n] for n in family.names}, f"size {name}", "named", name)
    add(s.workgroups(), "2+ workgroups in every grid dimension, a partial last one",
        "workgroups")
    at_base = {n: pools[n].index(base[n]) if base.get(n) in pools[n] else 0 for n in pools}
    for v, name in _series(family, pools, most=SHORT):   # short counts, the rest as under check
        add(s.nearest(at_base, fix={name: v}),
            f"{name} = {v} (a short trip count), the rest as at the size under check",
            "around", param=name)
    for v, name in _series(family, pools):          # one parameter at a time, smallest first
        add(s.nearest({n: 0 for n in pools}, fix={name: v}),
            f"{name} = {v} (trip counts 3, 2^k -/+ 1), the rest smallest", "series",
            param=name)
    add(s.nearest(s.target(_pow2_minus)), "trip counts 2^k - 1 in every parameter", "all")
    add(s.nearest(s.target(_pow2_plus)), "trip counts 2^k + 1 in every parameter", "all")
    rng = np.random.default_rng([seed, 0xFA417])
    for _ in range(family.members):
        add(s.random(rng), "random", "random")
    return out


SHORT = 17          # the longest trip count of the series around the size under check


def _series(family: Family, pools: dict[str, tuple[int, ...]],
            most: int | None = None) -> list[tuple[int, str]]:
    """Per parameter, its pool values whose count of its multiple is 3 or 2^k -/+ 1 (odd
    remainders for every power-of-two unroll factor and loop stride), interleaved across
    the parameters by that count, so a budget reaches every parameter's short trip counts
    before anyone's long ones. A list parameter (a block size) gives each of its values."""
    out = []
    for r in family.ranges:
        for v in pools[r.name]:
            t = v // r.multiple
            if most is not None and (r.values or t > most):
                continue
            if r.values or t == 3 or (t >= 3 and (_pow2_minus(t, 3) or _pow2_plus(t, 5))):
                out.append((t if not r.values else 0, v, r.name))
    return [(v, name) for _, v, name in sorted(out, key=lambda x: (x[0], x[2]))]


def _pow2_minus(t: int, least: int = 7) -> bool:
    return t >= least and (t + 1) & t == 0


def _pow2_plus(t: int, least: int = 9) -> bool:
    return t >= least and (t - 1) & (t - 2) == 0


class _Search:
    """Parameter vectors of a family, found by index into each parameter's pool."""

    def __init__(self, family: Family, base: dict, pools: dict[str, tuple[int, ...]], grid,
                 resolves: Callable[[dict], bool]):
        self.family, self.base, self.pools, self.grid = family, base, pools, grid
        self._resolves = resolves
        self.names = list(pools)
        self.budget_proxy = PROXY_FACTOR * max(family.budget, 1.0) * self.proxy(base)

    def key(self, values: dict) -> tuple:
        return tuple(values.get(n) for n in self.names)

    def proxy(self, values: dict) -> float:
        return float(np.prod([max(1, abs(values.get(n, 1))) for n in self.names]))

    def cheap(self, values: dict) -> bool:
        return self.proxy(values) <= self.budget_proxy

    def full(self, values: dict) -> dict:
        return {**self.base, **values}

    def resolves(self, full: dict) -> bool:
        try:
            return self.grid(full) is not None and self._resolves(full)
        except SpecError:
            return False

    def ok(self, values: dict) -> bool:
        full = self.full(values)
        return self.family.outside(full) is None and self.resolves(full)

    def target(self, want: Callable[[int], bool]) -> dict[str, int]:
        """Per parameter, the index of its smallest pool value of the wanted form (in
        units of its multiple), else its largest odd one, else its smallest."""
        out = {}
        for r in self.family.ranges:
            pool = self.pools[r.name]
            if r.values and self.base.get(r.name) in pool:     # a list (a block size, say):
                out[r.name] = pool.index(self.base[r.name])    # the size under check's
                continue
            ts = [v // r.multiple for v in pool]
            pick = next((i for i, t in enumerate(ts) if want(t)), None)
            if pick is None:
                odd = [i for i, t in enumerate(ts) if t % 2]
                pick = odd[-1] if odd else 0
            out[r.name] = pick
        return out

    def nearest(self, target: dict[str, int], fix: dict[str, int] | None = None) -> dict | None:
        """The family member closest to the pool indices ``target`` (fewest steps away,
        then smallest values), with the parameters in ``fix`` held."""
        free = [n for n in self.names if not fix or n not in fix]
        start = tuple(target[n] for n in free)
        heap, seen = [(0, start)], {start}
        for _ in range(MAX_SEARCH):
            if not heap:
                return None
            _, idx = heapq.heappop(heap)
            values = {n: self.pools[n][i] for n, i in zip(free, idx)} | (fix or {})
            if self.ok(values):
                return values
            for j in range(len(idx)):
                for d in (1, -1):
                    nxt = idx[:j] + (idx[j] + d,) + idx[j + 1:]
                    if 0 <= nxt[j] < len(self.pools[free[j]]) and nxt not in seen:
                        seen.add(nxt)
                        dist = sum(abs(a - b) for a, b in zip(nxt, start))
                        heapq.heappush(heap, (dist, nxt))
        return None

    def workgroups(self) -> dict | None:
        """The cheapest member with at least two workgroups in every grid dimension the
        parameters can move, preferring odd values (a partial last workgroup)."""
        low = {n: self.pools[n][0] for n in self.names}
        gmin = self._grid(low)
        if gmin is None:
            return None
        gmax = list(gmin)
        for n in self.names:            # each parameter up its pool, until a limit
            for v in self.pools[n][1:]:
                g = self._grid(low | {n: v})
                if g is None:
                    break
                gmax = [max(a, b) for a, b in zip(gmax, g)]
        moved = [d for d in range(len(gmax)) if gmax[d] > gmin[d]]
        if not moved:
            return None
        for need in (2, 3):
            want = [(d, min(need, gmax[d])) for d in moved]
            got = self._per_dimension(low, want)
            if got is not None:
                return got
            got = self._cheapest(lambda g: all(g[d] >= n for d, n in want))
            if got is not None:
                return got
        return None

    def _per_dimension(self, low: dict, want: list[tuple[int, int]]) -> dict | None:
        """From ``low``, for each grid dimension the one parameter that reaches its count
        at the smallest (odd first) pool value, all set at once; None where that is not a
        family member (the full search then looks further)."""
        values = dict(low)
        for d, n in want:
            best = None
            for name in self.names:
                pool = self.pools[name]
                odd = [v for v in pool if (v // self._multiple(name)) % 2] + list(pool)
                for v in odd:
                    g = self._grid(values | {name: v})
                    if g is not None and g[d] >= n:
                        if best is None or v < best[1]:
                            best = (name, v)
                        break
            if best is None:
                return None
            values[best[0]] = max(values[best[0]], best[1])
        g = self._grid(values)
        return values if g is not None and all(g[d] >= n for d, n in want) and \
            self.ok(values) else None

    def _multiple(self, name: str) -> int:
        return next(r.multiple for r in self.family.ranges if r.name == name)

    def _grid(self, values: dict) -> tuple | None:
        try:
            return self.grid(self.full(values))
        except SpecError:
            return None

    def _cheapest(self, good: Callable[[tuple], bool]) -> dict | None:
        start = tuple(0 for _ in self.names)
        heap, seen = [(self._cost(start), start)], {start}
        for _ in range(MAX_SEARCH):
            if not heap:
                return None
            _, idx = heapq.heappop(heap)
            values = {n: self.pools[n][i] for n, i in zip(self.names, idx)}
            g = self._grid(values)
            if g is not None and good(g) and self.ok(values):
                return values
            for j in range(len(idx)):
                nxt = idx[:j] + (idx[j] + 1,) + idx[j + 1:]
                if nxt[j] < len(self.pools[self.names[j]]) and nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (self._cost(nxt), nxt))
        return None

    def _cost(self, idx: tuple) -> tuple:
        values = [self.pools[n][i] for n, i in zip(self.names, idx)]
        even = sum(1 for v, r in zip(values, self.family.ranges) if (v // r.multiple) % 2 == 0)
        return (float(np.prod([max(1, abs(v)) for v in values])), even)

    def random(self, rng: np.random.Generator) -> dict | None:
        """A seeded member: each range parameter log-uniform between its low end and a
        few times the size under check, each list parameter one of its values."""
        for _ in range(64):
            values = {}
            for r in self.family.ranges:
                if r.values:
                    values[r.name] = int(rng.choice(np.array(r.values)))
                    continue
                m = r.multiple
                tl, th = -(-r.low // m), r.high // m
                cap = max(tl + 8, 4 * abs(self.base.get(r.name, tl * m)) // m)
                hi = max(tl, min(th, cap))
                t = int(round(math.exp(rng.uniform(math.log(max(tl, 1)), math.log(max(hi, 1))))))
                values[r.name] = min(max(t, tl), th) * m
            if self.ok(values):
                return values
        return None
