"""Terms evaluated at a concrete state: the semantics' answer, to compare with the
emulator's (the instruction check) or to print a counterexample's values.

The initial symbols of a :class:`~asmevo.prove.machine.Context` are replaced by a
:class:`~asmevo.prove.harness.Snapshot`'s values (the memory layout is the
harness's: one mapped allocation at :data:`~asmevo.prove.harness.BASE`), a lane
term is instantiated at all 64 lanes at once, and z3's simplifier folds the
result to a constant. The NaN choice among several NaN operands is evaluated as
the emulator's variant 0 (the first NaN operand, quieted).
"""
from __future__ import annotations

from asmevo.prove.harness import BASE, HEAP_BYTES, Snapshot
from asmevo.prove.machine import BV6, BV62, Context
from asmevo.prove.sem_float import NANPICK_PREFIX, nanpick_variant0
from asmevo.prove.term import bv, each_lane, has_lane
from asmevo.prove.z3env import z3


def _array(sort_index, width: int, values: dict[int, int]):
    arr = z3.K(sort_index, bv(0, width))
    for k, val in sorted(values.items()):
        arr = z3.Store(arr, bv(k, sort_index.size()), bv(val, width))
    return arr


def substitution(ctx: Context, snap: Snapshot, vregs=(), memory: bool = True) -> list:
    """(symbol, value) pairs for every initial symbol the shared side uses (the memory
    arrays only with ``memory``)."""
    subs = [(ctx.sgpr(r), bv(snap.s[r], 32)) for r in range(128)]
    subs.append((ctx.scc(), z3.BoolVal(bool(snap.scc))))
    for r in set(vregs) | set(snap.v):
        subs.append((ctx.vgpr_array(r), _array(BV6, 32, dict(enumerate(snap.vget(r))))))
    if memory:
        subs.append((ctx.mem0, _array(BV62, 32, {a >> 2: x for a, x in snap.mem.items()})))
        subs.append((ctx.lds0, _array(BV62, 32, {a >> 2: x for a, x in snap.lds.items()})))
    subs.append((ctx.lds_size, bv(snap.lds_size, 64)))
    if ctx.kernarg is not None:
        r, size = ctx.kernarg
        base = snap.s[r] | (snap.s[r + 1] << 32)
        subs.append((ctx.karg, _array(BV62, 32, {k: snap.mem.get(base + 4 * k, 0)
                                                for k in range((size + 3) // 4)})))
    return subs + harness_mapping(ctx)


def harness_mapping(ctx: Context) -> list:
    """(symbol, value) pairs of the harness's mapping: one allocation of
    :data:`HEAP_BYTES` at :data:`BASE`, nothing read-only, no private segment."""
    d = z3.BitVec("d", 62)
    lo, hi = BASE >> 2, (BASE + HEAP_BYTES) >> 2
    subs = [(ctx.unmapped_arr, z3.Lambda([d], z3.Not(z3.And(z3.UGE(d, lo), z3.ULT(d, hi))))),
            (ctx.readonly_arr, z3.K(BV62, z3.BoolVal(False)))]
    a = z3.BitVec("a", 64)
    for n, arr in ctx._small.items():
        # its last byte inside, compared without adding to the address (a + n wraps
        # past 2**64: 0xfffffffffffffffe + 2 == 0)
        inside = z3.And(z3.UGE(a, BASE), z3.ULE(a, BASE + HEAP_BYTES - n))
        subs.append((arr, z3.Lambda([a], z3.Not(inside))))
    subs += [(arr, z3.K(z3.BitVecSort(70), z3.BoolVal(False)))
             for arr in ctx.private_arr.values()]
    return subs


def _nanpicks(t, found: dict) -> None:
    if z3.is_app(t) and not z3.is_const(t):
        d = t.decl()
        if d.name().startswith(NANPICK_PREFIX) and all(z3.is_bv_value(c) for c in t.children()):
            found[t.get_id()] = t
            return
        for c in t.children():
            _nanpicks(c, found)


def fold(t):
    """``t`` (free of symbols) simplified to a value, the NaN choices made as variant 0."""
    t = z3.simplify(t)
    for _ in range(8):
        if z3.is_bv_value(t) or z3.is_true(t) or z3.is_false(t):
            return t
        found: dict = {}
        _nanpicks(t, found)
        if not found:
            return t
        pairs = []
        for app in found.values():
            args = [c.as_long() for c in app.children()]
            pairs.append((app, bv(nanpick_variant0(args, app.size()), app.size())))
        t = z3.simplify(z3.substitute(t, *pairs))
    return t


def value(t) -> int | bool:
    if z3.is_bv_value(t):
        return t.as_long()
    if z3.is_true(t):
        return True
    if z3.is_false(t):
        return False
    raise ValueError(f"not a value: {str(t)[:200]}")


def evaluate(t, subs: list):
    """The value of ``t`` (an int or bool; for a lane term, a list of 64)."""
    lane = has_lane(t)
    t = z3.substitute(t, *subs)
    if not lane:
        return value(fold(t))
    lanes = each_lane(t)
    if z3.is_bool(t):
        lanes = [z3.If(x, bv(1, 1), bv(0, 1)) for x in lanes]
    packed = fold(z3.Concat(*reversed(lanes)))
    bits = value(packed)
    w = lanes[0].size()
    out = [(bits >> (w * i)) & ((1 << w) - 1) for i in range(64)]
    return [bool(x) for x in out] if z3.is_bool(t) else out


