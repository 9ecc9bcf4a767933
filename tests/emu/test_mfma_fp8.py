"""v_mfma_f32_{16x16x32,32x32x16}_{fp8,bf8}_{fp8,bf8}: layouts, exact accumulation with one
rounding (variant 0), NaN, accumulator from registers or a constant, the approx variants.

The reference places matrix elements with the register-to-element formulas that
ROCm's matrix-instruction calculator prints for CDNA3, computes A @ B + C with
exact fractions and rounds to f32 by searching neighbours (ties to even).
"""
from fractions import Fraction

import numpy as np
import pytest

from asmevo.emu.isa import mfma_fp8
from tests.emu.asmdsl import run_asm
from tests.emu.test_fp8 import code_value


def round_f32(q: Fraction) -> np.float32:
    f = np.float32(float(q))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q),
                                     int(np.array(c, np.float32).view(np.uint32)) & 1))
    return np.float32(best)


def element_maps(M: int):
    """(lane, gpr, byte) -> A (i, k) and B (k, j); (lane, gpr) -> D (i, j)."""
    blk = M
    a_of = {}
    for lane in range(64):
        for g in range(2):
            for byte in range(4):
                a_of[(lane, g, byte)] = (lane % blk, 8 * (lane // blk) + 4 * g + byte)
    d_of = {}
    for lane in range(64):
        for g in range(M * M // 64):
            if M == 16:
                d_of[(lane, g)] = (4 * (lane // 16) + g, lane % 16)
            else:
                d_of[(lane, g)] = ((8 * (g // 4)) % 32 + 4 * (lane // 32) + g % 4, lane % 32)
    return a_of, d_of


def reference(M, fa, fb, aregs, bregs, cregs):
    K = 512 // M
    a_of, d_of = element_maps(M)
    A = [[None] * K for _ in range(M)]
    B = [[None] * M for _ in range(K)]
    for (lane, g, byte), (i, k) in a_of.items():
        A[i][k] = code_value(int(aregs[g][lane] >> (8 * byte)) & 0xFF, fa)
        B[k][i] = code_value(int(bregs[g][lane] >> (8 * byte)) & 0xFF, fb)
    out = {}
    for (lane, g), (i, j) in d_of.items():
        c = Fraction(float(cregs[g][lane].view(np.float32)))
        out[(lane, g)] = round_f32(sum((A[i][k] * B[k][j] for k in range(K)), c))
    return out


def random_regs(rng, n, nan_free=True):
    regs = [rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(n)]
    if nan_free:   # 0x80 is the NaN code: replace it by 0x81
        for r in regs:
            for b in range(4):
                byte = (r >> np.uint32(8 * b)) & np.uint32(0xFF)
                r[byte == 0x80] |= np.uint32(1 << (8 * b))
    return regs


@pytest.mark.parametrize("M,fa,fb", [(16, "fp8", "fp8"), (32, "fp8", "fp8"), (16, "bf8", "fp8"),
                                     (32, "bf8", "bf8"), (16, "fp8", "bf8")])
def test_mfma_fp8_matches_exact_reference(M, fa, fb):
    rng = np.random.default_rng(M + len(fa + fb))
    nacc = M * M // 64
    a, b = random_regs(rng, 2), random_regs(rng, 2)
    c = [rng.standard_normal(64).astype(np.float32) * 100 for _ in range(nacc)]
    v = {0: a[0], 1: a[1], 2: b[0], 3: b[1]}
    v.update({20 + r: c[r] for r in range(nacc)})
    name = f"v_mfma_f32_{M}x{M}x{512 // M}_{fa}_{fb}"
    o = run_asm(f"{name} v[40:{40 + nacc - 1}], v[0:1], v[2:3], v[20:{20 + nacc - 1}]\n"
                "s_nop 7\ns_nop 7\ns_nop 2", v=v)
    want = reference(M, fa, fb, a, b, [x.view(np.uint32) for x in c])
    for (lane, g), w in want.items():
        assert o.v(40 + g)[lane] == np.array(w, np.float32).view(np.uint32), (lane, g)


def test_constant_accumulator_and_agpr_operands():
    rng = np.random.default_rng(5)
    a, b = random_regs(rng, 2), random_regs(rng, 2)
    body = ("v_accvgpr_write_b32 a0, v0\nv_accvgpr_write_b32 a1, v1\n"
            "v_mfma_f32_16x16x32_fp8_fp8 a[4:7], a[0:1], v[2:3], 0\ns_nop 7\ns_nop 7\n"
            + "\n".join(f"v_accvgpr_read_b32 v{10 + r}, a{4 + r}" for r in range(4)))
    o = run_asm(body, v={0: a[0], 1: a[1], 2: b[0], 3: b[1]})
    zero = [np.zeros(64, np.uint32)] * 4
    want = reference(16, "fp8", "fp8", a, b, zero)
    for (lane, g), w in want.items():
        assert o.v(10 + g)[lane] == np.array(w, np.float32).view(np.uint32)


def test_nan_code_gives_the_variant_nan():
    a = [np.full(64, 0x3838_3880, np.uint32), np.full(64, 0x38383838, np.uint32)]  # one NaN byte
    b = [np.full(64, 0x38383838, np.uint32)] * 2
    o = run_asm("v_mfma_f32_16x16x32_fp8_fp8 v[10:13], v[0:1], v[2:3], 0\ns_nop 7\ns_nop 7",
                v={0: a[0], 1: a[1], 2: b[0], 3: b[1]})
    # lanes 0..15 hold rows 0..3 of D; every row of A holds the NaN in k block 0
    assert o.v(10)[0] == mfma_fp8.VARIANT_NANS[0]


def test_approx_variants_are_the_float_mfma_family():
    """Member k >= 1 as every float MFMA (asmevo.emu.numerics.approx): odd k adds k-blocks of four
    products (summed exactly) to C in f32 in ascending k; even k single products, descending."""
    rng = np.random.default_rng(9)
    K = 10
    A = rng.integers(-15, 16, (1, 2, K)) / 4          # fp8-exact values
    B = rng.integers(-15, 16, (1, K, 3)) / 4
    # a large C (f32 ulp 0.25 .. 0.5): the f32 roundings of the members matter
    C = (rng.standard_normal((1, 2, 3)) * 2.0 ** 22).astype(np.float32).astype(np.float64)
    v1 = mfma_fp8.accumulate(A, B, C, 1).view(np.float32)
    v2 = mfma_fp8.accumulate(A, B, C, 2).view(np.float32)
    for i in range(2):
        for j in range(3):
            p = [Fraction(float(A[0, i, k])) * Fraction(float(B[0, k, j])) for k in range(K)]
            acc = np.float32(C[0, i, j])
            for b in range(0, K, 4):
                acc = round_f32(Fraction(float(acc)) + sum(p[b:b + 4]))
            assert v1[0, i, j] == acc
            acc = np.float32(C[0, i, j])
            for k in reversed(range(K)):
                acc = round_f32(Fraction(float(acc)) + p[k])
            assert v2[0, i, j] == acc
    assert (v1 != v2).any() and (v1 != mfma_fp8.accumulate(A, B, C, 0).view(np.float32)).any()
    nan = np.full((1, 2, K), np.nan)
    assert mfma_fp8.accumulate(nan, B, C, 1)[0, 0, 0] == mfma_fp8.VARIANT_NANS[1]
