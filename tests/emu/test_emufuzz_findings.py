"""Open emufuzz findings in areas other branches own, as failing regression tests on the
exact operands (strict xfail: the day the emulator is fixed, these XPASS and the marker
must go). Each names its entry in /work/wt/emufuzz_findings.md."""
import numpy as np
import pytest

from tests.emu.asmdsl import run_asm


@pytest.mark.xfail(strict=True, reason="emufuzz finding (float mode/denormals, emu-exact): "
                   "v_mad_f32 refuses a denormal held by an *inactive* lane")
def test_mad_f32_ignores_denormals_in_inactive_lanes():
    # LLVM's 64-bit division expansion on gfx90a: v_madmk_f32 v2, v3, 0x4f800000, v2 with
    # f32 denormals kept; lanes that exited earlier still hold a denormal bit pattern
    a = np.full(64, 3.0, np.float32)
    b = np.full(64, 2.0, np.float32)
    c = np.full(64, 1.0, np.float32)
    a[1:] = np.float32(1e-40)                       # denormal, inactive lanes only
    o = run_asm("v_mad_f32 v0, v1, v2, v3", v={1: a, 2: b, 3: c}, exec_mask=1)
    assert o.vf(0)[0] == 7.0
