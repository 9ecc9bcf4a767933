"""The gfx940/gfx942 8-bit-float MFMAs: v_mfma_f32_{16x16x32,32x32x16}_{fp8,bf8}_{fp8,bf8}.

Layouts (CDNA3 ISA, MFMA register layout tables; the same as ROCm's
matrix-instruction calculator prints): A is M x K with lane ``l`` holding row
``l % M`` and the 8 consecutive k values from ``8 * (l // M)``, byte ``j`` of
the two A registers being k offset ``j`` (register ``j // 4``, bits
``8*(j%4)+7 : 8*(j%4)``); B likewise with columns; C/D as the other f32 MFMAs
of that shape (16x16: 4 registers, row ``4*(l//16) + r``; 32x32: 16
registers, row ``8*(r//4) + 4*(l//32) + r%4``). The first type names A (src0),
the second B (src1). These shapes have no CBSZ/ABID/BLGP broadcast controls.
MFMA ignores EXEC and MODE's denormal flags; C and D are not flushed.

The guide does not fix the order or precision of the accumulation, so the
result is an uninterpreted family indexed by the launch's ``approx_variant``
(see :func:`approx_variant`): variant 0 (the model every other MFMA uses) sums
the products and C exactly and rounds once to f32 (round to nearest even);
``k >= 1`` is the float MFMA family's member ``k`` (:func:`asmevo.emu.numerics.approx.mfma_member`:
odd k adds k-blocks of four products to C in f32, even k single products in
descending k). A NaN result has no specified bits: member ``k`` uses
``VARIANT_NANS[k % 3]``. A finite sum that overflows with MODE.FP16_OVFL
set (the guide then clamps "to +/-MAX"; which bit selects it is unclear) is
refused.
"""
from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from asmevo.emu.numerics import approx, fp8
from asmevo.emu.isa.cvt8 import fp16_ovfl
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.errors import UnsupportedInstruction
from asmevo.emu.isa.operands import raw_reader
from asmevo.emu.numerics.exact import round_sum

U32, F32, F64 = np.uint32, np.float32, np.float64
_NAME = re.compile(r"^v_mfma_f32_(16x16x32|32x32x16)_?(fp8|bf8)_(fp8|bf8)$")
VARIANT_NANS = (0x7FC00000, 0xFFC00000, 0x7FFFFFFF)
N_VARIANTS = len(VARIANT_NANS)


def approx_variant(c) -> int:
    """Which member of the not-exactly-specified family this launch uses (default 0)."""
    return int(c.approx_variant)


def layout(M: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (registers, 64): the D element each accumulator lane holds."""
    lanes = np.arange(64)
    if M == 32:
        rows = np.array([8 * (r // 4) + 4 * (lanes // 32) + r % 4 for r in range(16)])
        return rows, np.broadcast_to(lanes % 32, (16, 64))
    rows = np.array([4 * (lanes // 16) + r for r in range(4)])
    return rows, np.broadcast_to(lanes % 16, (4, 64))


def _bytes(w0: np.ndarray, w1: np.ndarray, fmt: str) -> np.ndarray:
    """Two (w, 64) registers -> (w, 64, 8) exact float64 values, byte j = k offset j."""
    vals = []
    for w in (w0, w1):
        for b in range(4):
            vals.append(fp8.decode_f64((w >> U32(8 * b)) & U32(0xFF), fmt))
    return np.stack(vals, axis=-1)


def operands(aw, bw, M: int, fa: str, fb: str) -> tuple[np.ndarray, np.ndarray]:
    """A (w, M, K) and B (w, K, N) from the source registers."""
    K = 512 // M
    av, bv = _bytes(aw[0], aw[1], fa), _bytes(bw[0], bw[1], fb)
    lanes = np.arange(64)
    w = av.shape[0]
    A = np.zeros((w, M, K), F64)
    B = np.zeros((w, K, M), F64)
    for j in range(8):
        A[:, lanes % M, 8 * (lanes // M) + j] = av[:, :, j]
        B[:, 8 * (lanes // M) + j, lanes % M] = bv[:, :, j]
    return A, B


def _exact_sum_f32(prods: np.ndarray, cval: float) -> int:
    """Bits of the correctly rounded f32 of sum(prods) + cval (all finite)."""
    exact = sum((Fraction(float(p)) for p in prods), Fraction(float(cval)))
    return _round_fraction_f32(exact)


def _round_fraction_f32(q: Fraction) -> int:
    if q == 0:
        return 0
    sign = 0x80000000 if q < 0 else 0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, -126)                       # subnormals share the minimum exponent
    scaled = q / Fraction(2) ** (e - 23)
    n, rem = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rem
    if twice > scaled.denominator or (twice == scaled.denominator and n & 1):
        n += 1
    value = Fraction(n) * Fraction(2) ** (e - 23)
    if value >= Fraction(2) ** 128 - Fraction(2) ** 104:
        return sign | 0x7F800000
    return sign | int(np.array(float(value), F32).view(U32))


def accumulate(A: np.ndarray, B: np.ndarray, C: np.ndarray, variant: int,
               exact_in_f64: bool = False) -> np.ndarray:
    """D = A @ B + C as f32 bits (w, M, N), the accumulation of ``variant``.

    ``exact_in_f64``: every partial sum of the products is exact in float64
    (fp8 x fp8: each product is a multiple of 2^-20 below 2^16, so any sum of
    32 of them needs at most 41 bits), so a plain matmul is the exact sum.
    """
    with np.errstate(all="ignore"):
        if variant % N_VARIANTS == 0 and exact_in_f64:
            out = round_sum(np.matmul(A, B), C, F32)
            nan = np.isnan(A).any(axis=2)[:, :, None] | np.isnan(B).any(axis=1)[:, None, :] \
                | np.isnan(C)
            bits = np.asarray(out, F32).view(U32).copy()
            bits[np.isnan(out) | nan] = VARIANT_NANS[0]
            return bits
    prods = A[:, :, :, None] * B[:, None, :, :]          # (w, M, K, N), exact
    with np.errstate(all="ignore"):
        if variant % N_VARIANTS == 0:
            out = _exact(prods, C)
        else:
            out = approx.mfma_member(np.moveaxis(prods, 2, -1), C.astype(F32), variant)
        bits = np.asarray(out, F32).view(U32).copy()
        nan = np.isnan(prods).any(axis=2) | np.isnan(C)
    bits[np.isnan(np.asarray(out, F32)) | nan] = VARIANT_NANS[variant % N_VARIANTS]
    return bits


def _exact(prods: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Exact sum of the products (checked by an error-free two-sum pass) plus C, rounded once."""
    s = np.zeros(C.shape, F64)
    lost = np.zeros(C.shape, bool)
    for k in range(prods.shape[2]):
        p = prods[:, :, k, :]
        t = s + p
        bb = t - s
        lost |= ((s - (t - bb)) + (p - bb)) != 0
        s = t
    out = round_sum(s, C.astype(F64), F32)
    inexact = lost & np.isfinite(s) & np.isfinite(C)
    if inexact.any():
        for idx in zip(*np.nonzero(inexact)):
            w, i, j = idx
            bits = _exact_sum_f32(prods[w, i, :, j], float(C[w, i, j]))
            out[w, i, j] = np.array(bits, U32).view(F32)
    return out


@register(*[f"v_mfma_f32_{s}_{a}_{b}" for s in ("16x16x32", "32x32x16")
            for a in ("fp8", "bf8") for b in ("fp8", "bf8")],
          *[f"v_mfma_f32_{s}{a}_{b}" for s in ("16x16x32", "32x32x16")
            for a in ("fp8", "bf8") for b in ("fp8", "bf8")])
def _mfma_fp8(ins: Insn) -> Decoded:
    m = _NAME.match(ins.base)
    if not m:
        raise ins.fail("MFMA shape")
    M = int(m.group(1).split("x")[0])
    fa, fb = m.group(2), m.group(3)
    for key in ("cbsz", "abid", "blgp"):
        if int(ins.mods.get(key, 0)):
            raise ins.fail(f"{key} (this MFMA has no broadcast controls)")
    if ins.mods.get("clamp"):
        raise ins.fail("clamp")
    d, a, b, cop = ins.ops[0], ins.ops[1], ins.ops[2], ins.ops[3]
    nacc = M * M // 64
    for o, n in ((d, nacc), (a, 2), (b, 2)):
        if o.kind != "v" or o.count != n:
            raise ins.fail(f"operand {o.text}: expected {n} registers")
    if cop.kind != "const" and (cop.kind != "v" or cop.count != nacc):
        raise ins.fail(f"operand {cop.text}: expected {nacc} registers or a constant")
    rows, cols = layout(M)
    c_const = raw_reader(cop, 32, True) if cop.kind == "const" else None

    def run(c):
        st = c.st
        aw = [st.v[a.reg + i, c.idx] for i in range(2)]
        bw = [st.v[b.reg + i, c.idx] for i in range(2)]
        A, B = operands(aw, bw, M, fa, fb)
        C = np.zeros((c.w, M, M), F64)
        for r in range(nacc):
            creg = np.broadcast_to(c_const(c), (c.w, 64)).astype(U32) if c_const is not None \
                else st.v[cop.reg + r, c.idx]
            C[:, rows[r], cols[r]] = creg.view(F32).astype(F64)
        D = accumulate(A, B, C, approx_variant(c), exact_in_f64=(fa == fb == "fp8"))
        if fp16_ovfl(c):
            over = ((D & U32(0x7FFFFFFF)) == U32(0x7F800000)) & np.isfinite(C)
            if over.any():
                raise UnsupportedInstruction(ins.mnemonic, c.kernel, c.address,
                                             "f32 overflow with MODE.FP16_OVFL set")
        for r in range(nacc):
            st.v[d.reg + r, c.idx] = D[:, rows[r], cols[r]]
    return op(run, variant=True)
