"""v_{min,max,med}3_{i,u}16 (VOP3, gfx9): the low half is the min / max / median of the
operands' low halves, signed or unsigned; the high half of the destination is what the
two-operand 16-bit VOP3 forms leave there (emufuzz seed 500 found v_max3_i16 refused)."""
import numpy as np
import pytest

from tests.emu.asmdsl import run_asm

RNG = np.random.default_rng(7)
SRC = {r: RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for r in (1, 2, 3)}
SRC[1][:4] = [0x00008000, 0x00007FFF, 0xFFFF0000, 0x0000FFFF]      # extremes of both readings
DST = np.full(64, 0xA5A55A5A, np.uint32)


def _low(x, signed):
    lo = (x & 0xFFFF).astype(np.uint16)
    return lo.view(np.int16) if signed else lo


@pytest.mark.parametrize("proc", ["gfx942", "gfx90a"])
@pytest.mark.parametrize("kind", ["i16", "u16"])
@pytest.mark.parametrize("op", ["min3", "max3", "med3"])
def test_three_operand_16_bit_integer(op, kind, proc):
    a, b, c = (_low(SRC[r], kind == "i16") for r in (1, 2, 3))
    want = {"min3": np.minimum(np.minimum(a, b), c), "max3": np.maximum(np.maximum(a, b), c),
            "med3": np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))}[op]
    o = run_asm(f"v_{op}_{kind} v0, v1, v2, v3", v={**SRC, 0: DST}, proc=proc)
    got = o.v(0)
    assert np.array_equal((got & 0xFFFF).astype(np.uint16), want.view(np.uint16))
    two = run_asm(f"v_max_{kind}_e64 v0, v1, v2", v={**SRC, 0: DST}, proc=proc).v(0)
    assert np.array_equal(got >> 16, two >> 16)
