"""Bit-vector and floating-point terms the semantics are written in.

A wave is 64 lanes. A vector value is one term in the free variable :data:`LANE`
(a 6-bit lane index): the value of *some* lane, so one term stands for all 64 and a
proof about it holds for every lane. Lane masks (EXEC, VCC, compare results) are
64-bit values; bit ``LANE`` of one is read with :func:`lane_bit`. An instruction
that crosses lanes (DPP, ``v_readlane``, a store by every lane) instantiates a
term at another lane with :func:`at_lane`, or at all 64 with :func:`each_lane`.

Floats are kept as their bits. An IEEE operation converts its operands with
``fpBVToFP`` (exact, NaN payloads included), computes in SMT-LIB FloatingPoint
with round-to-nearest-even, and converts back only where the result is not a NaN
(``fpToIEEEBV`` leaves a NaN's bits unspecified); a NaN result gets its bits from
the emulator's NaN rule, written on the bits (:mod:`asmevo.prove.sem_float`).
"""
from __future__ import annotations


from asmevo.memo import Memo, cached
from asmevo.prove.z3env import z3

LANE = z3.BitVec("lane", 6)
FORMATS = {16: (5, 10), 32: (8, 23), 64: (11, 52)}    # width: (exponent, mantissa) bits
DEFAULT_NAN = {16: 0xFE00, 32: 0xFFC00000, 64: 0xFFF8000000000000}
RNE = z3.RNE()


def bv(x: int, w: int):
    return z3.BitVecVal(x & ((1 << w) - 1), w)


def width(t) -> int:
    return t.size()


def zext(t, w: int):
    n = w - t.size()
    return t if n == 0 else (z3.ZeroExt(n, t) if n > 0 else z3.Extract(w - 1, 0, t))


def sext(t, w: int):
    n = w - t.size()
    return t if n == 0 else (z3.SignExt(n, t) if n > 0 else z3.Extract(w - 1, 0, t))


def low(t, w: int):
    return t if t.size() == w else z3.Extract(w - 1, 0, t)


def high32(t):
    return z3.Extract(63, 32, t)


def cat(hi, lo):
    """``hi:lo``; the halves of one 64-bit value written to a register pair and read
    back are that value again (the same term)."""
    if (z3.is_app_of(hi, z3.Z3_OP_EXTRACT) and z3.is_app_of(lo, z3.Z3_OP_EXTRACT)
            and hi.arg(0).eq(lo.arg(0)) and hi.arg(0).size() == hi.size() + lo.size()
            and hi.params() == [hi.arg(0).size() - 1, lo.size()] and lo.params() == [lo.size() - 1, 0]):
        return hi.arg(0)
    return z3.Concat(hi, lo)


def b2bv(b, w: int = 1):
    return z3.If(b, bv(1, w), bv(0, w))


# -- lanes ------------------------------------------------------------------------------

def lane_bit(mask, lane=LANE):
    """Bit ``lane`` of a 64-bit lane mask, as a Bool (``lane``: an int or a 6-bit term)."""
    if isinstance(lane, int):
        return z3.Extract(lane, lane, mask) == 1
    if z3.is_bv_value(lane):
        i = lane.as_long()
        return z3.Extract(i, i, mask) == 1
    return z3.Extract(0, 0, z3.LShR(mask, z3.ZeroExt(58, lane))) == 1


# term id -> (a term that keeps it alive: itself or one it is inside, whether it depends
# on LANE); emptied before a walk once it holds HAS_LANE_MAX entries (never during one: a
# walk reads back what it stored)
_HAS_LANE: Memo[tuple] = Memo("prove.term.has_lane", None)
HAS_LANE_MAX = 500_000


def _raw(name: str):
    """z3's C function ``name`` without the Python API's error check after each call: the
    walk below passes it only terms that exist (where that check and the wrapping of
    every child as an ExprRef took most of the walk's time)."""
    return getattr(z3.z3core, name).__defaults__[0].f


_KIND, _NARGS, _ARG, _ID, _BODY = (_raw(n) for n in (
    "Z3_get_ast_kind", "Z3_get_app_num_args", "Z3_get_app_arg", "Z3_get_ast_id",
    "Z3_get_quantifier_body"))
_APP, _QUANTIFIER = z3.Z3_APP_AST, z3.Z3_QUANTIFIER_AST


def has_lane(t) -> bool:
    """Whether ``t`` depends on :data:`LANE` (memoized over the DAG by term id; each
    entry keeps ``t`` alive, and with it every term inside it, so no id is reused while
    the entry lives). Iterative, on z3's C functions: a memory term after a few stores of
    every lane is thousands deep, and a DPP chain's terms are new at every step."""
    memo = _HAS_LANE
    got = memo.get(t.get_id())
    if got is not None:
        return got[1]
    if len(memo) > HAS_LANE_MAX:
        memo.clear()
    c, lane = t.ctx_ref(), LANE.get_id()
    stack = [(t.as_ast(), False)]
    while stack:
        a, expanded = stack.pop()
        aid = _ID(c, a)
        if memo.get(aid) is not None:
            continue
        kind = _KIND(c, a)
        if kind == _QUANTIFIER:
            kids = [_BODY(c, a)]
        elif kind == _APP:
            kids = [_ARG(c, a, i) for i in range(_NARGS(c, a))]
        else:                   # a numeral, a bound variable
            kids = []
        if not kids:
            memo.put(aid, (t, aid == lane))
            continue
        if expanded:
            memo.put(aid, (t, any(memo.get(_ID(c, k))[1] for k in kids)))
            continue
        stack.append((a, True))
        stack.extend((k, False) for k in kids if memo.get(_ID(c, k)) is None)
    return memo.get(t.get_id())[1]


def _substituted(t, lane, lane_dep: bool):
    """``t`` (which depends on LANE) with ``lane`` for LANE, its :func:`has_lane` noted:
    it depends on LANE exactly where ``lane`` does (every occurrence is replaced, nothing
    else added; ``substitute`` rebuilds without rewriting). A DPP chain's terms are new
    copies at every step, which a walk would visit again node by node (over 20 minutes
    on tri_topk_gating)."""
    out = z3.substitute(t, (LANE, lane))
    memo = _HAS_LANE
    if out.get_id() not in memo:
        if len(memo) > HAS_LANE_MAX:
            memo.clear()
        memo.put(out.get_id(), (out, lane_dep))
    return out


def at_lane(t, lane):
    """``t`` (a term in :data:`LANE`) at lane ``lane`` (an int or a 6-bit term)."""
    if not has_lane(t):
        return t
    if isinstance(lane, int):
        lane = bv(lane, 6)
    return _substituted(t, lane, has_lane(lane))


def each_lane(t) -> list:
    """``t`` at lanes 0..63."""
    if not has_lane(t):
        return [t] * 64
    return [_substituted(t, bv(i, 6), False) for i in range(64)]


def mask_of(bits: list):
    """A 64-bit lane mask from 64 Bools (lane 0 is bit 0)."""
    return z3.Concat(*[b2bv(b) for b in reversed(bits)])


@cached("prove.term.lane_table", 1024)
def lane_table(values: tuple[int, ...], w: int):
    """The term in :data:`LANE` that is ``values[lane]`` (a ``w``-bit value per lane): a
    tree of ``If`` on the lane's bits, highest first, a constant where a half is one
    value. Bits, not an array: a question over every lane with a DPP source lane or
    write mask in it stays one of bit-vectors (an array of 64 stores, indexed by the
    symbolic lane, took the solver past its limit on 64 lanes' stores)."""
    def half(lo: int, n: int):
        vals = values[lo:lo + n]
        if len(set(vals)) == 1:
            return bv(vals[0], w)
        k = (n // 2).bit_length() - 1
        return z3.If(z3.Extract(k, k, LANE) == 1, half(lo + n // 2, n // 2), half(lo, n // 2))
    return half(0, 64)


# -- floats on their bits ----------------------------------------------------------------

def fsort(w: int):
    return {16: z3.Float16(), 32: z3.Float32(), 64: z3.Float64()}[w]


def to_fp(bits):
    return z3.fpBVToFP(bits, fsort(bits.size()))


def fields(bits):
    """(sign, exponent, mantissa) bit-vectors of a float's bits."""
    w = bits.size()
    e, m = FORMATS[w]
    return (z3.Extract(w - 1, w - 1, bits), z3.Extract(w - 2, m, bits),
            z3.Extract(m - 1, 0, bits))


def is_nan(bits):
    _, e, m = fields(bits)
    return z3.And(e == bv(-1, e.size()), m != 0)


def is_snan(bits):
    w = bits.size()
    _, m = FORMATS[w]
    return z3.And(is_nan(bits), z3.Extract(m - 1, m - 1, bits) == 0)


def quiet(bits):
    """cvtToQuietNAN on the bits of a NaN (the quiet bit set, sign and payload kept)."""
    w = bits.size()
    return bits | bv(1 << (FORMATS[w][1] - 1), w)


def is_denormal(bits):
    _, e, m = fields(bits)
    return z3.And(e == 0, m != 0)


def ftz(bits):
    """Denormals flushed to the zero of their sign."""
    w = bits.size()
    return z3.If(is_denormal(bits), bits & bv(1 << (w - 1), w), bits)


def sign_of(bits):
    w = bits.size()
    return z3.Extract(w - 1, w - 1, bits) == 1


def fp_bits(f, nan_bits):
    """The bits of float term ``f``: ``nan_bits`` where it is a NaN."""
    return z3.If(z3.fpIsNaN(f), nan_bits, z3.fpToIEEEBV(f))
