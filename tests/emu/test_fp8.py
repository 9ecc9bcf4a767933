"""gfx942 8-bit floats: FNUZ decode tables, v_cvt_pk_{fp8,bf8}_f32 rounding/overflow/NaN,
the widening converts' byte and word selects, v_cvt_off_f32_i4, refusals.

Expected values come from an independent reference written here: the value of
every code from the format definition with exact fractions, and rounding by
searching that table for the nearest value (ties to the even code).
"""
from fractions import Fraction

import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm

FORMATS = {"fp8": (4, 3, 8), "bf8": (5, 2, 16)}      # exponent bits, mantissa bits, bias


def code_value(code: int, fmt: str):
    """The exact value of an FNUZ code (None for the NaN code 0x80)."""
    eb, mb, bias = FORMATS[fmt]
    if code == 0x80:
        return None
    sign = -1 if code & 0x80 else 1
    e, m = (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
    if e == 0:
        return sign * Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(m, 1 << mb)) * Fraction(2) ** (e - bias)


def ref_encode(x: float, fmt: str, ovfl: bool = False) -> int:
    """Nearest code by table search, ties to even mantissa; overflow per FP16_OVFL."""
    if x != x:
        return 0x80
    finite = [(c, code_value(c, fmt)) for c in range(256) if c != 0x80]
    top = max(v for _, v in finite)
    if x in (float("inf"), float("-inf")):
        return (0x80 if x < 0 else 0) | 0x7F if ovfl else 0x80
    q = Fraction(x)
    best = min(finite, key=lambda cv: (abs(cv[1] - q), cv[0] & 1, cv[0] >= 0x80))
    # at or past the midpoint above the largest finite value (whose code is odd, so the
    # tie goes up) the rounded value does not exist: overflow
    step = top - code_value(0x7E, fmt)
    if abs(q) >= top + step / 2:
        return ((0x80 if q < 0 else 0) | 0x7F) if ovfl else 0x80
    return 0 if best[1] == 0 else best[0]


def f32bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("fmt", ["fp8", "bf8"])
def test_every_code_decodes_exactly(fmt):
    codes = np.arange(256, dtype=np.uint32).reshape(64, 4)
    packed = codes[:, 0] | (codes[:, 1] << 8) | (codes[:, 2] << 16) | (codes[:, 3] << 24)
    body = "\n".join(f"v_cvt_f32_{fmt}_sdwa v{2 + b}, v1 src0_sel:BYTE_{b}" for b in range(4))
    body += f"\nv_cvt_pk_f32_{fmt}_sdwa v[6:7], v1 src0_sel:WORD_1\nv_cvt_f32_{fmt}_e32 v8, v1"
    o = run_asm(body, v={1: packed.astype(np.uint32)})
    got = np.stack([o.v(2 + b) for b in range(4)], axis=1).reshape(-1)
    for code in range(256):
        want = code_value(code, fmt)
        if want is None:
            assert got[code] == 0xFFC00000
        else:
            assert Fraction(float(got[code:code + 1].view(np.float32)[0])) == want, code
    np.testing.assert_array_equal(o.v(6), o.v(4))      # WORD_1 low byte = byte 2
    np.testing.assert_array_equal(o.v(7), o.v(5))
    np.testing.assert_array_equal(o.v(8), o.v(2))      # no SDWA: byte 0


CASES = [0.0, -0.0, 1.0, -1.5, 3.3, 1.0625, 1.1875, 239.9, 240.0, 247.9, 248.0, 255.0, -300.0,
         2.0 ** -10, 2.0 ** -11, 1.5 * 2.0 ** -10, 2.5 * 2.0 ** -10, 2.0 ** -12, -(2.0 ** -11) * 1.01,
         1e-45, -3e-39, 57344.0, 61439.0, 61440.0, 2.0 ** -17, 3 * 2.0 ** -18, 7.0e4,
         float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("fmt", ["fp8", "bf8"])
@pytest.mark.parametrize("ovfl", [0, 1])
def test_pk_convert_rounds_to_nearest_even_and_overflows_per_mode(fmt, ovfl):
    xs = np.array(CASES + [0.0] * (64 - len(CASES)), np.float32)
    ys = np.roll(xs, 7)
    # MODE.FP16_OVFL from the descriptor (s_setreg of it: tests/emu/test_mode_setreg.py)
    o = run_asm(f"v_mov_b32 v3, 0x5a5a5a5a\nv_cvt_pk_{fmt}_f32 v3, v1, v2\n"
                f"v_mov_b32 v4, 0x5a5a5a5a\nv_cvt_pk_{fmt}_f32 v4, v1, v2 op_sel:[0,0,1]",
                v={1: xs, 2: ys}, directives=f".amdhsa_fp16_overflow {ovfl}")
    for lane in range(len(CASES)):
        lo, hi = ref_encode(float(xs[lane]), fmt, bool(ovfl)), ref_encode(float(ys[lane]), fmt,
                                                                           bool(ovfl))
        assert o.v(3)[lane] == 0x5A5A0000 | lo | (hi << 8), (lane, xs[lane])
        assert o.v(4)[lane] == 0x00005A5A | (lo << 16) | (hi << 24), (lane, xs[lane])


def test_pk_convert_refuses_a_round_mode_other_than_nearest_even():
    with pytest.raises(UnsupportedInstruction, match="round toward zero"):
        run_asm("v_cvt_pk_fp8_f32 v3, v1, v2", v={1: np.full(64, 3.3, np.float32)},
                directives=".amdhsa_float_round_mode_32 3")


def test_pk_convert_source_modifiers_and_exec():
    xs = np.full(64, 1.5, np.float32)
    ys = np.full(64, -2.0, np.float32)
    o = run_asm("v_mov_b32 v3, 0\nv_cvt_pk_fp8_f32 v3, -v1, |v2|", v={1: xs, 2: ys},
                exec_mask=0b101)
    want = ref_encode(-1.5, "fp8") | (ref_encode(2.0, "fp8") << 8)
    assert o.v(3)[0] == want and o.v(3)[2] == want and o.v(3)[1] == 0


def test_cvt_off_f32_i4_is_the_signed_nibble_in_sixteenths():
    src = (np.arange(64, dtype=np.uint32) % 16) * 0x01010101
    src = src | (np.uint32(0xF0) << np.uint32(8))     # high nibbles must not matter
    o = run_asm("v_cvt_off_f32_i4_e32 v2, v1\n"
                "v_cvt_off_f32_i4_sdwa v3, v1 dst_sel:DWORD dst_unused:UNUSED_PRESERVE "
                "src0_sel:BYTE_2", v={1: src})
    nib = np.arange(64) % 16
    want = np.where(nib >= 8, nib - 16, nib) / 16.0
    np.testing.assert_array_equal(o.vf(2), want.astype(np.float32))
    np.testing.assert_array_equal(o.vf(3), want.astype(np.float32))


@pytest.mark.parametrize("text", [
    "v_cvt_sr_fp8_f32 v1, v2, v3",
    "v_cvt_pk_fp8_f32 v1, v2, v3 op_sel:[1,0,0]",
    "v_cvt_pk_fp8_f32 v1, s2, v3",
])
def test_refused_forms(text):
    with pytest.raises(UnsupportedInstruction):
        run_asm(text)
