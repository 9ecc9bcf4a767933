"""gfx950 objects on the emulator: their gfx942 part runs, the rest is refused."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.emu import Emulator
from asmevo.emu.isa.decode import decode_one
from asmevo.targets.amdgpu import TargetId, load, recover
from asmevo.targets.amdgpu.assembly import to_asm
from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
from asmevo.launch.spec import load_spec, make_inputs
from tests.conftest import KERNELS, ROOT


def _decode(text, processor):
    return decode_one(text, index=0, address=0, kernel="k", accum_offset=0, processor=processor)


@pytest.mark.parametrize("text", ["v_cvt_pk_fp8_f32 v1, v2, v3",
                                  "v_cvt_f32_bf8_e32 v1, v2",
                                  "v_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]",
                                  "v_mfma_f32_16x16x32_bf8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]"])
def test_fp8_is_refused_on_gfx950_with_the_reason(text):
    d = _decode(text, "gfx950")
    assert d.ctl == "fault" and "OCP E4M3/E5M2" in d.error.message
    err = _decode(text, "gfx942").error           # gfx942: FNUZ, the emulator's own formats
    assert err is None or "OCP" not in err.message


def test_gfx950_only_instructions_are_refused():
    for text in ("v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[8:11], v[0:3], v1, v2",
                 "v_permlane16_swap_b32_e32 v1, v2", "v_cvt_pk_bf16_f32 v1, v2, v3"):
        d = _decode(text, "gfx950")
        assert d.ctl == "fault" and "gfx942's ISA" in d.error.message, text
    assert _decode("v_add_f32_e32 v1, v2, v3", "gfx950").ctl == "op"


def test_aiter_mxfp4_decode_report_names_what_is_refused():
    from collections import Counter
    co = load(ROOT / "tests" / "data" / "aiter_gfx950" /
              "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128.co")
    fn = recover(co).kernels[0]
    acc = co.kernels[0].descriptor.accum_offset
    refused = Counter(d.mnemonic for d in (
        decode_one(i.text, index=k, address=i.address, kernel=fn.name, accum_offset=acc,
                   processor="gfx950") for k, i in enumerate(fn.instructions))
        if d.ctl == "fault")
    assert refused["v_mfma_scale_f32_16x16x128_f8f6f4"] == 80
    assert refused["v_cvt_scalef32_pk_fp4_f32"] > 0
    assert sum(refused.values()) < len(fn.instructions) // 4   # the rest decodes


def test_gfx942_code_built_for_gfx950_runs_and_matches():
    """vector_add reassembled for gfx950 by LLVM: same instructions, same results."""
    try:
        tc = find_toolchain("gfx950")
    except ToolchainError as exc:
        pytest.skip(str(exc))
    src = KERNELS / "vector_add" / "vector_ops.gfx942.co"
    co = load(src)
    asm = to_asm(recover(co)).replace(f'"{co.target.triple_target}"',
                                      '"amdgcn-amd-amdhsa--gfx950"')
    data = build_asm(asm, TargetId("gfx950", co.target.xnack, co.target.sramecc),
                     section_starts={".text": co.text.addr}, tc=tc)
    k950 = load(data, path="vector_ops.gfx950")
    assert k950.target.processor == "gfx950"
    spec = load_spec(KERNELS / "vector_add", "small")
    inputs = make_inputs(spec, 0)
    want = Emulator(src).launch(spec, inputs).raise_for_status().outputs
    got = Emulator(data).launch(spec, inputs).raise_for_status().outputs
    assert set(want) == set(got)
    for name in want:
        assert np.array_equal(np.asarray(want[name]).view(np.uint8),
                              np.asarray(got[name]).view(np.uint8)), name
