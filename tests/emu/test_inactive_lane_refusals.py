"""Refusals that depend on operand values look at active lanes only: an inactive lane's
register is not read, so its garbage must not refuse the instruction (found on AITer's
fmha_bwd_hd64_odo_fp16, IEEE clear: a masked-off lane held a signalling NaN pattern left
by verification's garbage fill, and the whole K0 was refused)."""
import numpy as np
import pytest

from asmevo.emu.errors import UnsupportedInstruction
from tests.emu.asmdsl import run_asm

SNAN = np.uint32(0x7FA00001)


def _lanes(value, lane):
    v = np.full(64, 0x3F800000, np.uint32)   # 1.0
    v[lane] = value
    return v


@pytest.mark.parametrize("mnemonic,snan", [("v_add_f32_e32 v3, v1, v2", SNAN),
                                           ("v_pk_add_f16 v3, v1, v2", np.uint32(0x7D017D01))])
def test_snan_in_an_inactive_lane_with_ieee_clear_runs(mnemonic, snan):
    exec_mask = (1 << 64) - 1 - (1 << 5)
    o = run_asm(mnemonic, v={1: _lanes(snan, 5), 2: np.full(64, 0x3C003C00, np.uint32)},
                exec_mask=exec_mask, directives=".amdhsa_ieee_mode 0")
    assert o.v(3)[0] != 0


@pytest.mark.parametrize("mnemonic,snan", [("v_add_f32_e32 v3, v1, v2", SNAN),
                                           ("v_pk_add_f16 v3, v1, v2", np.uint32(0x7D017D01))])
def test_snan_in_an_active_lane_with_ieee_clear_is_still_refused(mnemonic, snan):
    with pytest.raises(UnsupportedInstruction, match="signalling NaN"):
        run_asm(mnemonic, v={1: _lanes(snan, 5), 2: np.full(64, 0x3C003C00, np.uint32)},
                directives=".amdhsa_ieee_mode 0")


def test_mad_denormal_in_an_inactive_lane_runs():
    den = np.uint32(0x00000001)
    exec_mask = (1 << 64) - 1 - (1 << 7)
    o = run_asm("v_mad_f32 v3, v1, v2, v1", v={1: _lanes(den, 7), 2: np.full(64, 2.0, np.float32)},
                exec_mask=exec_mask, proc="gfx90a")      # v_mad_f32 is gfx90a's
    assert o.v(3)[0] == np.float32(3.0).view(np.uint32)
    with pytest.raises(UnsupportedInstruction, match="denormal"):
        run_asm("v_mad_f32 v3, v1, v2, v1", v={1: _lanes(den, 7), 2: np.full(64, 2.0, np.float32)},
                proc="gfx90a")
