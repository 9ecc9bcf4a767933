"""Input sets for differential runs: seeded draws from the spec plus special values.

Special values (:func:`asmevo.launch.dtypes.special_values`: signed zeros,
infinities, quiet NaNs with several payloads, signalling NaNs, denormals, the
extremes of the type) go in two ways, because code differs on them in two ways:

* ``special``: scattered. Every special value lands at every lane position
  (index mod 64) where the buffer is long enough, at positions that change from
  lane to lane, plus random salt; the rest stays a seeded draw.
* ``special_rows``: whole runs of one value, aligned to the lengths a kernel
  splits its work by (the workgroup's work-items, a wave's 64 lanes, and every
  size parameter that divides the buffer: a matrix row). A reduction over a row
  of -inf, a wave whose every lane is NaN, take paths no scattered value reaches.
* ``special_runs``: runs of one value at seeded positions of every alignment and
  of lengths from 1 to the whole buffer, one of them ending at the buffer's last
  element (the tail of a buffer that is not a whole number of rows or waves).

Scalar arguments with a ``domain`` take a different drawn value in every set
after ``seed0`` (:func:`asmevo.launch.spec.scalar_values`); ``special_rows`` keeps
the spec's own values, so its runs line up with the rows the kernel sees.

K0 decides the kernel's domain: an input set on which K0 itself faults is
dropped (and reported), never held against a candidate.
"""
from __future__ import annotations

import math

import numpy as np

from asmevo.launch import frozen
from asmevo.memo import Memo
from asmevo.launch.dtypes import path_values, special_values
from asmevo.launch.spec import ArgSpec, LaunchSpec, make_inputs

POISON_BYTE = 0xA5          # output buffers are filled with this before the first set's launches
# the poison of the i-th input set of a check (outputs hold it before each of its launches):
# a candidate that leaves an element unwritten where K0 writes it differs from K0 on the
# set whose poison is not the value K0 writes there
POISONS = (POISON_BYTE, 0x5A, 0x00, 0xFF, 0x3C, 0xC3, 0x7F, 0x80)
GUARD_BYTE = 0x5A           # guard regions around every buffer (on run variant 0)
LANES = 64


def guard_pattern(variant: int) -> int:
    """The guard fill byte of run ``variant``: variants 0 and 2 (1 and 3) are bitwise
    complements, so a read past a buffer sees a value that changes in every bit
    between the candidate's runs (as floats: huge positive, then tiny negative)."""
    return (GUARD_BYTE, 0xC3, 0xFF ^ GUARD_BYTE, 0x3C)[variant % 4]


def _salted(a: ArgSpec, arr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Every special value at every lane position (as far as the buffer reaches), at
    rows that shift with the lane, then random salt on about 1 in 16 of the rest."""
    sv = special_values(a.dtype)
    out = arr.copy()
    n, nv = out.size, sv.size
    idx = np.arange(n)
    lane, row = idx % LANES, idx // LANES
    period = 3 * nv                    # one value per lane per 3 rows: a third is special
    k = (row + 5 * lane + int(rng.integers(0, period))) % period
    hit = k < nv
    out[hit] = sv[k[hit]]
    rest = np.flatnonzero(~hit)
    salt = rest[rng.random(rest.size) < 1 / 16]
    out[salt] = sv[rng.integers(0, nv, salt.size)]
    return out


def run_lengths(spec: LaunchSpec, count: int, scalars: dict | None = None) -> list[int]:
    """Lengths a kernel may split a buffer of ``count`` elements by, longest first: the
    workgroup's work-items, a wave, size parameters that divide the buffer, and the
    set's integer scalar arguments (a row length the kernel is told at run time)."""
    lens = {math.prod(spec.block), LANES}
    lens |= {v for v in spec.params.values() if isinstance(v, int) and 16 <= v < count
             and count % v == 0}
    lens |= {int(v) for v in (scalars or {}).values()
             if isinstance(v, (int, np.integer)) and 2 <= v < count}
    return sorted((v for v in lens if 1 < v < count), reverse=True)


def _rows(a: ArgSpec, arr: np.ndarray, spec: LaunchSpec, rng: np.random.Generator,
          scalars: dict) -> np.ndarray:
    """Aligned runs of one path value (-inf, +inf, NaN, +0, -0, sNaN, ...) each.

    Of the runs of the longest length every other one is filled; the runs between
    them (and a remainder) are split the same way by the next length, and so on,
    so a buffer gets whole rows, whole workgroups and whole waves of special values."""
    vals = path_values(a.dtype)
    out = arr.copy()
    lens = run_lengths(spec, out.size, scalars)
    if not lens:
        out[:] = vals[int(rng.integers(0, vals.size))]
        return out
    nxt = [int(rng.integers(0, 2))]       # which parity of run is filled, then the value count

    def split(s: int, e: int, k: int) -> None:
        if k >= len(lens) or e <= s:
            return
        L = lens[k]
        first = -(-s // L) * L
        split(s, min(first, e), k + 1)
        r = 0
        pos = first
        while pos + L <= e:
            if (r + nxt[0]) % 2 == 0:
                out[pos:pos + L] = vals[(len(nxt) - 1) % vals.size]
                nxt.append(0)
            else:
                split(pos, pos + L, k + 1)
            pos, r = pos + L, r + 1
        split(max(pos, s), e, k + 1)

    nxt[0] = 0
    split(0, out.size, 0)
    return out


def _runs(a: ArgSpec, arr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Runs of one special value each at seeded starts of any alignment, their lengths
    log-uniform from 1 to the whole buffer, one ending at the last element; about a
    quarter of the buffer is covered."""
    vals = special_values(a.dtype)
    out = arr.copy()
    n = out.size
    covered, first = 0, True
    while covered < max(1, n // 4):
        length = max(1, min(n, int(np.exp(rng.uniform(0, np.log(n + 1))))))
        start = n - length if first else int(rng.integers(0, n - length + 1))
        out[start:start + length] = vals[int(rng.integers(0, vals.size))]
        covered, first = covered + length, False
    return out


LAYOUTS = ("scattered", "rows", "runs")


def special_inputs(spec: LaunchSpec, seed: int, *, rows: bool = False,
                   scalars: dict | None = None, layout: str | None = None) -> dict:
    """Seed ``seed``'s draw with special values in every eligible input buffer
    (inputs and in/out buffers whose spec allows ``special``), laid out
    ``"scattered"``, in whole ``"rows"`` (also ``rows=True``) or in ``"runs"`` of any
    alignment and length. ``scalars`` overrides the draw's scalar arguments."""
    layout = layout or ("rows" if rows else "scattered")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown special-value layout {layout!r}")
    vals = make_inputs(spec, seed)
    vals.update(scalars or {})
    sc = {a.name: vals[a.name] for a in spec.args if a.kind == "scalar"}
    rng = np.random.default_rng(10_000 + seed)
    for a in spec.args:
        if a.kind != "buffer" or a.output or not a.special:
            continue
        if layout == "rows":
            vals[a.name] = _rows(a, vals[a.name], spec, rng, sc)
        elif layout == "runs":
            vals[a.name] = _runs(a, vals[a.name], rng)
        else:
            vals[a.name] = _salted(a, vals[a.name], rng)
    return vals


def set_poison(j: int) -> int:
    """The poison byte of the ``j``-th input set of a check."""
    return POISONS[j % len(POISONS)]


def poisoned(spec: LaunchSpec, values: dict, poison: int = POISON_BYTE) -> dict:
    """Buffer contents for one launch: inputs and in/out buffers as drawn, outputs
    filled with the ``poison`` byte. The arrays are read-only (a device copies them
    in) and made once per (spec, input set, poison): every candidate of a check
    launches with the same ones (:mod:`asmevo.launch.frozen`)."""
    key = (id(spec), id(values), poison)
    got = _POISONED.get(key)
    if got is not None and got[0] is spec and got[1] is values:
        return dict(got[2])
    out = {}
    for a in spec.buffers:
        arr = np.array(values[a.name], order="C", copy=True)
        if a.output:
            arr.view(np.uint8)[:] = poison
        out[a.name] = frozen.freeze(arr)
    for a in spec.args:
        if a.kind != "buffer":
            out[a.name] = values[a.name]
    size = sum(v.nbytes for v in out.values() if isinstance(v, np.ndarray))
    if size <= POISONED_BYTES // 8:
        _POISONED.put(key, (spec, values, out, size))   # the spec and values held: ids stay theirs
    return dict(out)


POISONED_BYTES = 256 << 20      # kept of launches' buffers, at most
_POISONED: Memo[tuple] = Memo("verify.poisoned", 512, evict="lru", weigh=lambda e: e[3],
                              maxweight=POISONED_BYTES)


def interior_scalars(spec: LaunchSpec) -> dict:
    """One value inside every scalar's domain, a third of the way up (an integer one
    not a multiple of 64: a partial tail, and for row kernels fewer columns than
    work-items); a list's second value. Scalars without a domain keep their value."""
    out = {}
    for a in spec.args:
        if a.kind != "scalar":
            continue
        d = a.domain
        if d is None:
            out[a.name] = a.value
        elif d.values:
            out[a.name] = d.values[min(1, len(d.values) - 1)]
        elif isinstance(d.low, int) and isinstance(d.high, int):
            v = d.low + (d.high - d.low) // 3
            out[a.name] = v - 1 if v % 64 == 0 and v - 1 >= d.low else v
        else:
            out[a.name] = d.low + (d.high - d.low) / 3
    return out


def input_sets(spec: LaunchSpec, seeds=(0, 1, 2), special: bool = True) -> list[tuple[str, dict]]:
    """``seed<s>`` per seed, then ``special`` (scattered, scalars drawn as for seed
    ``max(seeds) + 1``), ``special_rows`` (whole runs, the spec's scalar values),
    ``special_runs`` (runs of any alignment and length, scalars drawn) and, when a
    scalar has a domain, ``special_rows_inner`` (whole runs, rows as long as
    :func:`interior_scalars` says: a row of -inf where some work-items have no column)."""
    sets = [(f"seed{s}", make_inputs(spec, s)) for s in seeds]
    if special:
        base = max(seeds, default=0)
        fixed = {a.name: a.value for a in spec.args if a.kind == "scalar"}
        sets.append(("special", special_inputs(spec, base + 1)))
        sets.append(("special_rows", special_inputs(spec, base + 2, rows=True, scalars=fixed)))
        if any(a.domain is not None for a in spec.args):
            sets.append(("special_rows_inner", special_inputs(
                spec, base + 3, rows=True, scalars=interior_scalars(spec))))
        sets.append(("special_runs", special_inputs(spec, base + 4, layout="runs")))
    return sets


def member_sets(spec: LaunchSpec, j: int, special: bool = True) -> list[tuple[str, dict]]:
    """The input set of a launch-family member (the ``j``-th): for even ``j`` a seeded
    draw with the scalars the member's parameters give them, for odd ``j`` special
    values in runs of any alignment and length with the scalars drawn from their
    domains (one set each: a family's members are many, and the size under check has
    every kind of set)."""
    seed = 1000 + 10 * j
    if special and j % 2:
        return [("special_runs", special_inputs(spec, seed + 1, layout="runs"))]
    fixed = {a.name: a.value for a in spec.args if a.kind == "scalar"}
    return [("draw", {**make_inputs(spec, seed), **fixed})]
