"""Float atomics (global_atomic_pk_add_bf16, buffer_atomic_add_f32, buffer_atomic_pk_add_f16)
and scalar atomics (s_atomic_*): exact where the ISA guide is exact, refused where it is not.

References: bf16 sums rounded by an exact-fraction nearest-even search; f16 and f32
sums by numpy's IEEE arithmetic (one correctly rounded operation each).
"""
from fractions import Fraction

import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm
from tests.emu.test_lds_dma import VSHARP


def bf16_value(h: int) -> Fraction:
    return Fraction(float(np.array(h << 16, np.uint32).view(np.float32)))


def ref_bf16_add(a: int, b: int) -> int:
    """Nearest bf16 (ties to even) to the exact sum, searched among the neighbours."""
    q = bf16_value(a) + bf16_value(b)
    f = np.array(float(q), np.float32).view(np.uint32) >> np.uint32(16)
    cands = []
    for d in (-1, 0, 1):
        h = (int(f) + d) & 0xFFFF
        if (h & 0x7F80) != 0x7F80:
            cands.append(h)
    best = min(cands, key=lambda h: (abs(bf16_value(h) - q), h & 1))
    if q == 0:
        return 0x8000 if (a & 0x8000 and b & 0x8000) else 0
    return best


def pack(lo, hi):
    return np.asarray(lo, np.uint32) | (np.asarray(hi, np.uint32) << np.uint32(16))


def bf16_bits(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint32)


def test_global_pk_add_bf16_rounds_to_nearest_even():
    rng = np.random.default_rng(3)
    old = bf16_bits(rng.standard_normal(128).astype(np.float32) * 50)
    data = bf16_bits(rng.standard_normal(128).astype(np.float32) * 50)
    # exact ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7; 1 + 3*2^-8 rounds up
    old[:4] = bf16_bits([1.0, 1.0, 256.0, -1.0])
    data[:4] = [0x3B80, 0x3C40, 0x3F80, 0x3B80]          # 2^-8, 3*2^-8, 1.0, 2^-8
    mem = pack(old[0::2], old[1::2])
    body = """
    v_lshlrev_b32_e32 v2, 2, v0
    global_atomic_pk_add_bf16 v2, v1, s[4:5]
"""
    o = run_asm(body, v={1: pack(data[0::2], data[1::2])}, buffers={"m": mem}, ptrs={"m": 4})
    got = o.buf("m")
    for i in range(64):
        for half, k in ((0, 2 * i), (16, 2 * i + 1)):
            assert (int(got[i]) >> half) & 0xFFFF == ref_bf16_add(int(old[k]), int(data[k])), k


@pytest.mark.parametrize("old,data", [(0x0001, 0x3F80), (0x3F80, 0x7FC0), (0x0080, 0x8001)])
def test_bf16_denormal_or_nan_is_refused(old, data):
    with pytest.raises(UnsupportedInstruction):
        run_asm("v_mov_b32 v2, 0\nglobal_atomic_pk_add_bf16 v2, v1, s[4:5]",
                v={1: np.full(64, data, np.uint32)}, exec_mask=1,
                buffers={"m": np.array([old], np.uint32)}, ptrs={"m": 4})


def test_buffer_add_f32_offen_idxen_and_range_check():
    rng = np.random.default_rng(4)
    mem = rng.standard_normal(64).astype(np.float32)
    data = rng.standard_normal(64).astype(np.float32)
    body = VSHARP.format(nrec=4 * 60) + """
    v_lshlrev_b32_e32 v2, 2, v0
    buffer_atomic_add_f32 v1, v2, s[8:11], 0 offen
"""
    o = run_asm(body, v={1: data}, buffers={"m": mem.copy()}, ptrs={"m": 4})
    want = mem.copy()
    want[:60] = mem[:60] + data[:60]               # lanes 60..63 fail the range check
    np.testing.assert_array_equal(o.buf("m").view(np.uint32), want.view(np.uint32))
    body = VSHARP.format(nrec=64) + """
    s_or_b32 s9, s9, 0x40000
    buffer_atomic_add_f32 v1, v0, s[8:11], 0 idxen offset:4
"""
    before = np.concatenate([mem, [0]]).astype(np.float32)
    o = run_asm(body, v={1: data}, buffers={"m": before.copy()}, ptrs={"m": 4})
    got = o.buf("m")
    assert got[0] == before[0]
    np.testing.assert_array_equal(got[1:65], (before[1:65] + data).astype(np.float32))


def test_buffer_pk_add_f16_keeps_denormals():
    old = pack(np.full(64, 0x0001), np.full(64, 0x3C00))      # f16 smallest denormal, 1.0
    data = pack(np.full(64, 0x0001), np.arange(64) + 0x3C00)
    body = VSHARP.format(nrec=256) + """
    s_or_b32 s9, s9, 0x40000
    buffer_atomic_pk_add_f16 v1, v0, s[8:11], 0 idxen
"""
    o = run_asm(body, v={1: data}, buffers={"m": old.copy()}, ptrs={"m": 4})
    lo = (o.buf("m") & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (o.buf("m") >> 16).astype(np.uint16).view(np.float16)
    assert (lo.view(np.uint16) == 2).all()
    want = (np.float16(1.0) + (np.arange(64) + 0x3C00).astype(np.uint16).view(np.float16))
    np.testing.assert_array_equal(hi, want.astype(np.float16))


def test_f32_denormal_and_same_address_lanes_are_refused():
    body = VSHARP.format(nrec=256) + "v_mov_b32 v2, 0\nbuffer_atomic_add_f32 v1, v2, s[8:11], 0 offen"
    with pytest.raises(UnsupportedInstruction, match="same address"):
        run_asm(body, v={1: np.ones(64, np.float32)}, buffers={"m": np.zeros(4, np.float32)},
                ptrs={"m": 4})
    with pytest.raises(UnsupportedInstruction, match="denormal"):
        run_asm(body, v={1: np.full(64, 1e-40, np.float32)}, exec_mask=1,
                buffers={"m": np.zeros(4, np.float32)}, ptrs={"m": 4})


def test_returning_float_atomic_is_refused():
    with pytest.raises(UnsupportedInstruction):
        run_asm("global_atomic_pk_add_bf16 v3, v2, v1, s[4:5] sc0",
                buffers={"m": np.zeros(64, np.uint32)}, ptrs={"m": 4})


def test_scalar_atomic_inc_dec_and_return():
    body = """
    s_mov_b32 s10, 3
    s_mov_b32 s11, 4
    s_atomic_inc s10, s[4:5], s11 glc
    s_mov_b32 s12, 3
    s_mov_b32 s13, 0
    s_atomic_inc s12, s[4:5], s13
    s_mov_b32 s14, 7
    s_mov_b32 s15, 8
    s_atomic_dec s14, s[4:5], s15 glc
    s_waitcnt lgkmcnt(0)
"""
    o = run_asm(body, buffers={"c": np.array([5, 3, 0, 9], np.uint32)}, ptrs={"c": 4})
    c = o.buf("c")
    assert c[1] == 0 and o.s(10) == 3      # inc: old 3 >= data 3 wraps to 0; glc returns 3
    assert c[0] == 0 and o.s(12) == 3      # 5 >= 3 wraps too; no glc: s12 keeps its data
    assert c[2] == 7 and o.s(14) == 0      # dec: old 0 becomes data 7; returns 0
    assert c[3] == 9
    o = run_asm("s_mov_b32 s10, 100\ns_atomic_inc s10, s[4:5], 0x0\n"
                "s_mov_b32 s12, 100\ns_atomic_dec s12, s[4:5], 0x4\ns_waitcnt lgkmcnt(0)",
                buffers={"c": np.array([5, 9], np.uint32)}, ptrs={"c": 4}, block=128)
    assert list(o.buf("c")) == [7, 7]      # two waves, each +1 / -1
