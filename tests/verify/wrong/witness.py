"""Is a candidate really wrong? K0 and it run directly on the emulator, outside the
verifier, on the launches its witness names; and the launches worth naming.

The probes here are chosen by this module's own rules (each size parameter moved
alone to nearby odd values, to 2^k -/+ 1, to enough workgroups), not by the
verifier's member selection, so that a witness can find a difference at a launch the
verifier does not run: such a candidate is then counted accepted, not "not wrong".
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from tests.verify.wrong.base import Probe, Wrong

GUARD = 256                 # bytes mapped around each buffer (writes past an end land there)
POISON = 0xA5               # what output buffers hold before the launch
MAX_PROBES = 14             # launches a generic witness tries
COST_FACTOR = 16            # a probe's parameter product at most this x the size under check's


def witnessed(ctx, wrong: Wrong, data: bytes, notes: list | None = None) -> str | None:
    """Why ``data`` (the built candidate) is not K0's function, or None if the witness
    finds no difference. Runs on the emulator directly, not through the verifier.
    A launch where the emulator cannot run the candidate (status "unsupported") while
    K0 runs shows nothing either way; its reason is appended to ``notes``."""
    from asmevo.verify.evaluate import k0_state
    st = k0_state(ctx)
    if wrong.witness != "launches":
        return _classic(st, wrong, data)
    key = (ctx, wrong.edits, tuple(p.label for p in wrong.probes))
    if key not in _WITNESSED:
        why, seen = None, []
        for p in wrong.probes:
            why = _probe(ctx, st, p, data, seen)
            if why:
                break
        if len(_WITNESSED) > 512:
            _WITNESSED.clear()
        _WITNESSED[key] = (why, tuple(seen))
    why, seen = _WITNESSED[key]
    if notes is not None:
        notes.extend(seen)
    return why


_WITNESSED: dict = {}


def _classic(st, wrong: Wrong, data: bytes) -> str | None:
    from asmevo.emu import run_launch
    from asmevo.launch.spec import make_inputs
    spec = st.spec

    def outs(code, values, seed):
        r = run_launch(code, spec, values, garbage_seed=seed)
        return r.status, {a.name: r.outputs[a.name].view(np.uint8).copy() for a in spec.outputs}

    def differs(a, b):
        return a[0] != b[0] or any(not np.array_equal(a[1][n], b[1][n]) for n in a[1])

    if wrong.witness == "inputs":
        for label, values in wrong.inputs:
            if differs(outs(st.k0_bytes, values, None), outs(data, values, None)):
                return f"differs from K0 on {label}"
        return None
    values = make_inputs(spec, 0)
    k0 = outs(st.k0_bytes, values, 11)
    for seed in (11, 12345, 777):
        if differs(k0, outs(data, values, seed)):
            return f"depends on undefined state (garbage seed {seed})"
    return None


# -- one probe ------------------------------------------------------------------------------

_K0_RUNS: dict = {}


def probe_spec(ctx, st, p: Probe):
    """The launch spec of ``p`` (the size under check, or the family member)."""
    if not p.member:
        return st.spec
    from asmevo.launch.family import Member
    from asmevo.launch.spec import family_space
    space = family_space(ctx.spec_path, ctx.size)
    return space.resolve(Member(tuple(p.member), "witness"))


def _run(code: bytes, spec, values, p: Probe, order=None, cached: bool = False):
    """One launch; ``order`` a workgroup order, or "serial"/"serial_reverse" (waves one
    at a time up to their next barrier, lowest or highest first)."""
    from asmevo.emu.run.launch import Emulator, emulator_for
    fill = {a.name: POISON for a in spec.buffers if a.output}
    aliases = {b: (base, off) for b, base, off in p.aliases} or None
    kw = {"schedule": order} if order in ("serial", "serial_reverse") else {"order": order}
    emu = emulator_for(code) if cached else Emulator(code)
    r = emu.launch(spec, values, guard_bytes=GUARD, guard_fill=0x5A,
                                  fill=fill, aliases=aliases, **kw)
    return r


# K0 under an overlap is in the contract only where its result does not depend on the
# order workgroups run in, nor on the order waves of one workgroup run in (waves are not
# in lockstep on hardware: a store one wave makes that another reads through the overlap,
# with no barrier between them, is a race K0 has)
CONTRACT = (None, "ascending", "descending", "serial", "serial_reverse")


def _bytes(spec, r) -> tuple:
    return (r.status if r.status != "ok" else "ok",
            tuple(r.outputs[a.name].view(np.uint8).tobytes() for a in spec.buffers),
            tuple(r.guards.get(a.name, (b"", b"")) for a in spec.buffers))


@dataclass(frozen=True)
class _Seen:
    """What a witness keeps of one K0 run: its status, a digest of every buffer's and
    guard's bytes, its same-address lane stores."""

    ok: bool
    digest: str
    lane_conflicts: tuple


def _seen(spec, r) -> _Seen:
    h = hashlib.sha256()
    status, bufs, guards = _bytes(spec, r)
    h.update(status.encode())
    for b in bufs:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    for g0, g1 in guards:
        h.update(g0)
        h.update(g1)
    return _Seen(r.ok, h.hexdigest(), tuple(r.lane_conflicts))


def _k0(ctx, st, spec, values, p: Probe, order):
    key = (st.k0_bytes.__hash__(), ctx.spec_path, ctx.isa, p.member, p.seed, id(p.values)
           if p.values is not None else None, p.aliases, order)
    hit = _K0_RUNS.get(key)
    if hit is None:
        if len(_K0_RUNS) > 256:
            _K0_RUNS.clear()
        hit = _K0_RUNS[key] = _seen(spec, _run(st.k0_bytes, spec, values, p, order,
                                               cached=True))
    return hit


def _probe(ctx, st, p: Probe, data: bytes, notes: list) -> str | None:
    from asmevo.errors import AsmevoError
    from asmevo.launch.spec import make_inputs
    try:
        spec = probe_spec(ctx, st, p)
        from asmevo.emu.run.launch import check_size
        check_size(spec)
    except AsmevoError:
        return None
    values = p.values if p.values is not None else make_inputs(spec, p.seed)
    where = p.label
    if p.aliases:
        runs = []
        for o in CONTRACT:
            runs.append(_k0(ctx, st, spec, values, p, o))
            if not runs[-1].ok or runs[-1].digest != runs[0].digest:
                return None              # outside the contract: K0 fails or depends on order
        k0 = runs[0]
    else:
        k0 = _k0(ctx, st, spec, values, p, p.order)
        if not k0.ok:
            return None                  # K0 fails there: the launch shows nothing
    got = _run(data, spec, values, p, p.order)
    if got.status == "unsupported":
        notes.append(f"at {where}: the emulator cannot run the candidate "
                     f"({' '.join(got.message.split())[:120]})")
        return None
    if p.lanes:
        if got.lane_conflicts and not k0.lane_conflicts:
            return f"at {where}: lanes of one wave store different values to one address " \
                   f"({got.lane_conflicts[0][:100]})"
        return None
    if _seen(spec, got).digest == k0.digest:
        return None
    a = _bytes(spec, _run(st.k0_bytes, spec, values, p, p.order, cached=True))
    b = _bytes(spec, got)
    if a[0] != b[0]:
        return f"at {where}: K0 {a[0]}, candidate {b[0]} ({' '.join(got.message.split())[:80]})"
    for buf, x, y in zip(spec.buffers, a[1], b[1]):
        if x != y:
            xa, ya = np.frombuffer(x, np.uint8), np.frombuffer(y, np.uint8)
            n = int(np.count_nonzero(xa != ya))
            return f"at {where}: {buf.name} differs in {n} bytes"
    return f"at {where}: the candidate writes past a buffer (guard bytes differ)"


# -- generic probes -----------------------------------------------------------------------

def member_probes(k, *, grid_dim: int | None = None, seed: int = 0,
                  limit: int = MAX_PROBES, only: tuple[str, ...] = ()) -> tuple[Probe, ...]:
    """Family members worth a witness, cheapest first: each size parameter moved alone
    (others at the size under check) to values next to it, odd values, 2^k - 1 and
    2^k + 1; with ``grid_dim``, first the cheapest members with 2 and 3 workgroups in
    that grid dimension. Members whose parameter product is more than
    :data:`COST_FACTOR` times the size under check's are left out."""
    space = k.space
    fam = space.family
    if not fam.ranges:
        return ()
    base = {n: space.base[n] for n in fam.names}
    cap = COST_FACTOR * _proxy(base)
    seen, out = {tuple(base.items())}, []

    def add(values: dict, why: str, first: bool = False) -> None:
        key = tuple((n, values[n]) for n in fam.names)
        if key in seen or _proxy(values) > cap:
            return
        full = {**space.base, **values}
        if fam.outside(full) is not None or space.grid(full) is None:
            return
        seen.add(key)
        label = ",".join(f"{n}={v}" for n, v in key)
        out.append(((not first, _proxy(values)), Probe(f"{label} ({why})", key, seed)))

    if grid_dim is not None:
        g0 = space.grid(space.base)
        for r in fam.ranges:
            for v in _values(r, base[r.name], wide=True):
                g = space.grid({**space.base, r.name: v})
                if g is not None and g0 is not None and g[grid_dim] >= 2 \
                        and g[grid_dim] != g0[grid_dim]:
                    add({**base, r.name: v}, f"{g[grid_dim]} workgroups in grid dimension "
                        f"{'xyz'[grid_dim]}", first=True)
    for r in fam.ranges:
        if only and r.name not in only:
            continue
        for v in _values(r, base[r.name]):
            add({**base, r.name: v}, _why(v))
    # every parameter at once: odd and off every power of two
    both = {r.name: _odd_above(r, base[r.name]) for r in fam.ranges}
    if all(v is not None for v in both.values()):
        add(both, "every parameter odd")
    out.sort(key=lambda x: x[0])
    return tuple(p for _, p in out[:limit])


def _why(v: int) -> str:
    if v >= 7 and (v + 1) & v == 0:
        return "2^k - 1"
    if v >= 9 and (v - 1) & (v - 2) == 0:
        return "2^k + 1"
    return "odd" if v % 2 else "even"


def _proxy(values: dict) -> float:
    return float(np.prod([max(1, abs(v)) for v in values.values()]))


def _values(r, v0: int, wide: bool = False) -> list[int]:
    """Values of range ``r`` near ``v0``: v0 -/+ 1, -/+ 3, the 2^k -/+ 1 around it,
    the ends; ``wide`` adds 2x, 3x, 4x, 8x, 16x, 64x and 256x v0 (plus one)."""
    if r.values:
        return sorted(set(r.values) - {v0}, key=lambda x: abs(x - v0))
    m = r.multiple
    cand = {v0 - m, v0 + m, v0 - 3 * m, v0 + 3 * m, r.low, r.low + m}
    k = max(1, int(math.log2(max(1, v0))))
    for j in range(max(1, k - 2), k + 4):
        cand |= {(1 << j) - 1, (1 << j) + 1}
    if wide:
        cand |= {f * v0 + s * m for f in (2, 3, 4, 8, 16, 64, 256) for s in (0, 1)}
    ok = [c for c in cand if c in r and c != v0]
    return sorted(ok, key=lambda x: (abs(x - v0), x))


def _odd_above(r, v0: int) -> int | None:
    for c in sorted(_values(r, v0), key=lambda x: (x < v0, abs(x - v0))):
        if (c // r.multiple) % 2 == 1:
            return c
    return None


def small_probe(label: str = "the size under check", **kw) -> Probe:
    return Probe(label, (), **kw)
