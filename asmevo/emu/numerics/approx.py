"""Instructions the ISA specifies only to within an error bound, as function families.

``v_rcp_f32`` is "1 ULP accurate", not correctly rounded, and no document
says which of the two neighbours of the true value hardware returns; MFMA
leaves its summation order open. Such an instruction is modeled as an
*uninterpreted function family*: the launch option ``approx_variant`` picks a
member. Variant 0 is the correctly rounded value (float64 math, rounded
once; MFMA summed in float64 and rounded once). Variant ``k >= 1`` is a
deterministic member inside the documented bound, chosen per element by a
hash of ``(k, opcode, input bits)``:

* f32 ``v_exp``, ``v_log``, ``v_rcp``, ``v_rcp_iflag``, ``v_rsq``, ``v_sqrt``
  (1 ULP; the ISA gives no bound for ``v_sin``/``v_cos``, which use the same
  1 ULP member): where the true value is not representable, about half the
  elements return the other neighbour of the true value (still within
  1 ULP);
* f16 ``v_exp``, ``v_log``, ``v_rcp``, ``v_rsq``, ``v_sqrt`` (0.51 ULP): the other
  neighbour only where the true value lies within 0.01 ULP of a midpoint;
* f64 ``v_rcp``, ``v_rsq``, ``v_sqrt`` (2^29 ULP): an offset of up to +-2^28 ULP
  where the result is not exact;
* MFMA with float inputs: odd variants add k-blocks of four products (summed
  in float64) to the float32 accumulator in ascending k, rounding per block;
  even variants add single products in descending k, rounding each time;
* ``v_dot2_f32_f16``/``v_dot2c_f32_f16``: the pseudocode's two f32 additions,
  rounded each.

A kernel that keeps using the instruction the same way gives the same bits
under every member; one that replaces it by "equivalent" exact math differs
under some ``k >= 1``. Exact results (powers of two, perfect squares, the
ISA's special values) are never perturbed.
"""
from __future__ import annotations

import zlib

import numpy as np

from asmevo.emu.numerics.fpmode import _QUIET, quiet

F16, F32, F64 = np.float16, np.float32, np.float64
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def opcode_key(name: str) -> int:
    return zlib.crc32(name.encode())


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, on uint64 arrays."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def element_hash(variant: int, opcode: int, *inputs: np.ndarray) -> np.ndarray:
    """A deterministic 64-bit hash per element of ``(variant, opcode, input bits)``."""
    out = np.uint64(((variant & 0xFFFFFFFF) << 32) | (opcode & 0xFFFFFFFF))
    with np.errstate(over="ignore"):
        out = _mix(np.asarray(out))
        for x in inputs:
            x = np.asarray(x)
            out = _mix(out ^ x.view(_UINT[x.dtype.itemsize]).astype(np.uint64))
    return out


def faithful(exact: np.ndarray, r: np.ndarray, variant: int, opcode: int, x: np.ndarray,
             bound: float = 1.0) -> np.ndarray:
    """A family member within ``bound`` ULP: ``r`` (the correctly rounded value of
    ``exact``, a float64 approximation of the true value good to ~2^-52) or, for
    hash-selected inexact elements, the neighbour of ``r`` on the other side of it."""
    if variant == 0:
        return r
    dt = r.dtype.type
    with np.errstate(all="ignore"):
        r64 = r.astype(F64)
        inexact = np.isfinite(r) & (r != 0) & np.isfinite(exact) & (exact != r64)
        other = np.where(exact > r64, np.nextafter(r, dt(np.inf)), np.nextafter(r, dt(-np.inf)))
        ok = inexact & np.isfinite(other) & (other != 0)
        if bound < 1.0:
            spacing = np.abs(other.astype(F64) - r64)
            ok &= np.abs(other.astype(F64) - exact) <= bound * spacing
        pick = (element_hash(variant, opcode, x) & np.uint64(1)) == 1
        return np.where(ok & pick, other, r).astype(dt)


def offset_ulps(r: np.ndarray, exact_mask: np.ndarray, variant: int, opcode: int,
                x: np.ndarray, max_ulps: int) -> np.ndarray:
    """A member of a family with a bound of ``max_ulps`` ULP: ``r`` moved by a
    hash-chosen number of ULPs in [-max_ulps/2, max_ulps/2] (inexact, finite,
    nonzero results only; never across zero or to infinity)."""
    if variant == 0:
        return r
    ui = _UINT[r.dtype.itemsize]
    h = element_hash(variant, opcode, x)
    span = np.uint64(max_ulps)
    off = (h % span).astype(np.int64) - np.int64(max_ulps // 2)
    b = r.view(ui).astype(np.int64)
    sign_bit = np.int64(1) << np.int64(8 * r.dtype.itemsize - 1)
    mag = b & ~sign_bit
    new = mag + off
    top = np.asarray(np.finfo(r.dtype).max, r.dtype).view(ui).astype(np.int64)
    ok = (~exact_mask) & np.isfinite(r) & (r != 0) & (new > 0) & (new <= top)
    out = np.where(ok, (b & sign_bit) | new, b)
    return out.astype(ui).view(r.dtype)


_DEFAULT_NAN = {2: 0xFE00, 4: 0xFFC00000, 8: 0xFFF8000000000000}


def nan_result(res: np.ndarray, inputs: list[np.ndarray], variant: int, opcode: int,
               mask: np.ndarray | None = None) -> np.ndarray:
    """The NaN an arithmetic instruction returns, where its result is NaN.

    A NaN operand propagates quieted, payload and sign kept; which one when
    several are NaN is not documented, so it belongs to the family: variant 0
    takes the first in source order, variant ``k >= 1`` a hash-chosen one. A
    NaN made from non-NaN operands (0*inf, inf-inf, sqrt(-1)) is the default
    NaN (0xffc00000; the ISA's functional examples). Results of another format
    than the operands (conversions) are quieted.

    ``mask`` (the shape of ``res``; None: every element): the elements that are
    written (EXEC's lanes). The others are left as computed: callers discard them.
    """
    res = np.asarray(res)
    nan, at = nan_elements(res, mask)
    if at is None:
        return res
    if res.ndim == 0 or 2 * at.size > nan.size:
        return nan_rule(res, nan, inputs, variant, opcode)
    # the rule is elementwise and leaves non-NaN results alone: run it on the NaN
    # elements only (special-value inputs make some lanes NaN, seldom most of them: up
    # to half of them, the gathers and the scatter cost less than the rule's ~4 passes
    # per operand over every element)
    out = np.array(res, order="C")
    flat = out.reshape(-1)
    flat[at] = nan_rule(rule_res(flat, at, inputs), None,
                        [flat_at(x, res.shape, at) for x in inputs], variant, opcode)
    return out


def nan_by_member(res, srcs, members: np.ndarray, key: int, mask):
    """:func:`nan_result` where wave ``i`` (row ``i``) belongs to member
    ``members[i]``: the rule is elementwise, so each member's NaN elements get its own
    (found once, then grouped by member, as nan_result runs it on NaN elements only)."""
    rs = np.shape(res)
    if len(rs) == 2 and rs[0] == members.size:  # a row per wave already (the common case)
        shape, full = rs, res
    else:
        shape = np.broadcast_shapes(rs, (members.size, 1))
        full = np.broadcast_to(res, shape)
    _, at = nan_elements(full, mask)
    if at is None:      # nothing to change: as nan_result, the result as computed
        return res if rs == shape else np.array(full)
    res = np.array(full)
    flat = res.reshape(-1)
    vals = rule_res(flat, at, srcs)
    ins = [flat_at(x, res.shape, at) for x in srcs]
    members_in = _members_in(members)
    if len(members_in) == 1:
        flat[at] = nan_rule(vals, None, ins, members_in[0], key)
        return res
    # member 0's rule on every NaN element, then each other member's on its elements
    # with two or more NaN operands: only there does a member's choice differ from
    # member 0's (one NaN operand: that one; none: the default NaN; a conversion: no
    # choice at all), and the rule is elementwise
    got = nan_rule(vals, None, ins, 0, key)
    if all(np.asarray(x).dtype == flat.dtype for x in srcs):
        nans = [np.isnan(x) for x in ins]
        if len(nans) == 2:
            multi = np.flatnonzero(nans[0] & nans[1])
        elif len(nans) > 2:
            multi = np.flatnonzero(np.add.reduce([m.astype(np.int8) for m in nans]) >= 2)
        else:
            multi = np.zeros(0, np.int64)
        if multi.size:
            of = members[at[multi] // (res.size // res.shape[0])]
            for m in members_in:
                k = multi[of == m] if m else multi[:0]
                if k.size:
                    got[k] = nan_rule(vals[k], None, [x[k] for x in ins], m, key)
    flat[at] = got
    return res


_MEMBERS: list = [None, []]


def _members_in(members: np.ndarray) -> list[int]:
    """``np.unique(members)`` as a list, kept for the last array (a batch's Ctx passes one
    array to every float row it runs)."""
    if _MEMBERS[0] is not members:
        _MEMBERS[:] = [members, np.unique(members).tolist()]
    return _MEMBERS[1]


def rule_res(flat: np.ndarray, at: np.ndarray, inputs) -> np.ndarray:
    """``flat[at]`` as :func:`nan_rule` (``nan`` None) takes it: where every input has the
    result's format the rule reads only its shape and dtype, so no gather then."""
    if all(np.asarray(x).dtype == flat.dtype for x in inputs):
        return np.empty(at.shape, flat.dtype)
    return flat[at]


def flat_at(x, shape, at: np.ndarray) -> np.ndarray:
    """``flat_of(x, shape)[at]``: a gather of the flat indices ``at``, without a copy of a
    broadcast scalar (one value: the same value at every index)."""
    x = np.asarray(x)
    if x.shape == shape:
        return np.take(x.reshape(-1), at)
    if x.size == 1:
        return np.broadcast_to(x.reshape(()), at.shape)
    if len(shape) == 2 and x.shape == (shape[0], 1):   # a value per row (a scalar operand)
        return np.take(x.reshape(-1), at // shape[1])
    return np.take(flat_of(x, shape), at)


def nan_elements(res: np.ndarray, mask: np.ndarray | None):
    """(where ``res`` is NaN in a written element, their flat indices; None when there is
    none): ``mask`` as :func:`nan_result` takes it."""
    nan = np.isnan(res)
    if mask is not None and mask.shape == nan.shape:
        nan &= mask
    if not nan.any():
        return nan, None
    return nan, np.flatnonzero(nan)


def _shaped(x, shape) -> np.ndarray:
    x = np.asarray(x)
    return x if x.shape == shape else np.broadcast_to(x, shape)


def flat_of(x, shape) -> np.ndarray:
    """``x`` broadcast to ``shape``, as one C-ordered row (a view where it can be)."""
    return np.ascontiguousarray(_shaped(x, shape)).reshape(-1)


def nan_rule(res: np.ndarray, nan: np.ndarray, inputs: list[np.ndarray], variant: int,
              opcode: int) -> np.ndarray:
    """:func:`nan_result` on arrays of one shape (``nan``: where ``res`` is NaN; None:
    every element is)."""
    ui = _UINT[res.dtype.itemsize]
    same = [_shaped(x, res.shape) for x in inputs if np.asarray(x).dtype == res.dtype]
    if len(same) != len(inputs):      # a conversion between formats
        if nan is None:
            nan = np.ones(res.shape, bool)
        if len(inputs) == 1:
            src = _shaped(inputs[0], res.shape)
            return np.where(nan & np.isnan(src), convert_nan(src, res.dtype),
                            np.where(nan, quiet(res), res))
        return np.where(nan, quiet(res), res)
    if nan is None:
        bits = np.full(res.shape, _DEFAULT_NAN[res.dtype.itemsize], ui)
    else:
        bits = np.where(nan, np.array(_DEFAULT_NAN[res.dtype.itemsize], ui).view(res.dtype),
                        res).view(ui)
    nans = [np.isnan(x) for x in same]
    chosen = None
    if variant and sum(1 for m in nans if m.any()) >= 2:
        h = element_hash(variant, opcode, *same)
        count = np.sum(nans, axis=0)
        pick = (h % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
        chosen = np.full(res.shape, -1, np.int64)
        seen = np.zeros(res.shape, np.int64)
        for i, m in enumerate(nans):
            chosen = np.where(m & (seen == pick) & (chosen < 0), i, chosen)
            seen = seen + m
    # first NaN operand wins (variant 0); ``sel`` lies inside operand i's NaNs, where
    # quieting is setting the quiet bit (fpmode.quiet), so it is done on the bits
    # (np.where: a masked ufunc or copyto is several times slower on scattered masks)
    q = _QUIET[res.dtype.itemsize]
    for i in range(len(same) - 1, -1, -1):
        sel = nans[i] if chosen is None else chosen == i
        if nan is not None:
            sel = sel & nan
        bits = np.where(sel, same[i].view(ui) | q, bits)
    return bits.view(res.dtype)


_MANT_BITS = {2: 10, 4: 23, 8: 52}


def convert_nan(x: np.ndarray, dt) -> np.ndarray:
    """A NaN converted to another float format: sign kept, payload truncated (narrowing)
    or extended with zeros (widening), quieted (IEEE 754 convertFormat; what x86 does)."""
    x = np.asarray(x)
    dt = np.dtype(dt)
    ms, md = _MANT_BITS[x.dtype.itemsize], _MANT_BITS[dt.itemsize]
    b = x.view(_UINT[x.dtype.itemsize]).astype(np.uint64)
    sign = (b >> np.uint64(8 * x.dtype.itemsize - 1)) & np.uint64(1)
    mant = b & np.uint64((1 << ms) - 1)
    mant = mant >> np.uint64(ms - md) if md < ms else mant << np.uint64(md - ms)
    width = 8 * dt.itemsize
    exp = np.uint64(((1 << (width - 1 - md)) - 1) << md)
    out = (sign << np.uint64(width - 1)) | exp | mant | np.uint64(1 << (md - 1))
    return out.astype(_UINT[dt.itemsize]).view(dt)


def mfma_member(products: np.ndarray, acc: np.ndarray, variant: int) -> np.ndarray:
    """Float MFMA accumulation of one family member.

    ``products``: (..., K) float64 exact products per output element, ``acc``:
    (...) float32 accumulator. Variant 0 sums everything in float64 and rounds
    once; odd ``k`` adds k-blocks of four products (summed in float64) to the
    float32 accumulator in ascending k order, rounding after each block; even
    ``k`` adds the products one at a time in descending k order, rounding
    after each.
    """
    with np.errstate(all="ignore"):
        if variant == 0:
            return (products.sum(axis=-1) + acc.astype(F64)).astype(F32)
        k = products.shape[-1]
        width = 4 if variant % 2 else 1
        blocks = [products[..., i:i + width].sum(axis=-1) for i in range(0, k, width)]
        if variant % 2 == 0:
            blocks = blocks[::-1]
        out = acc.astype(F32)
        for b in blocks:
            out = (out.astype(F64) + b).astype(F32)
        return out
