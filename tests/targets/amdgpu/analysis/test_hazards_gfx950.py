"""gfx950's manual wait states, on written-out code.

Every expected count is LLVM 22's: ``llc -run-pass=post-RA-hazard-rec`` on the
same pair written as MIR (the ``mir`` column; :func:`test_llc_agrees` reruns
it against the installed LLVM that knows gfx950). gfx942 columns are given
where the instructions exist there, to show what gfx950 changes.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
from tests.targets.amdgpu.analysis.test_hazards import _problems, nops

E = ", implicit $mode, implicit $exec"
# LLVM looks 19 wait states back for MFMA results: a 16-pass XDL result that needs 20
# is no hazard once 19 lie between (llc agrees: test_llc_agrees_at_the_lookback_edge)
MAX_LOOKBACK = 19


def _r(base: int, n: int) -> str:
    return "_".join(("$" if i == 0 else "") + f"vgpr{base + i}" for i in range(n))


BF16 = "v_mfma_f32_16x16x32_bf16 v[0:3], v[40:43], v[48:51], v[0:3]"
BF16_MIR = f"{_r(0, 4)} = V_MFMA_F32_16X16X32_BF16_vgprcd_e64 {_r(40, 4)}, {_r(48, 4)}, {_r(0, 4)}, 0, 0, 0{E}"
F64 = "v_mfma_f64_16x16x4_f64 v[0:7], v[40:41], v[42:43], v[0:7]"
F64_MIR = f"{_r(0, 8)} = V_MFMA_F64_16X16X4F64_vgprcd_e64 {_r(40, 2)}, {_r(42, 2)}, {_r(0, 8)}, 0, 0, 0{E}"
ADD = "v_add_f32_e32 v20, v1, v21"
ADD_MIR = f"$vgpr20 = V_ADD_F32_e32 $vgpr1, $vgpr21{E}"
FP4 = "v_cvt_scalef32_pk_fp4_f32 v2, v5, v6, v7"
FP4_MIR = f"$vgpr2 = V_CVT_SCALEF32_PK_FP4_F32_e64 0, $vgpr5, 0, $vgpr6, {{}}, $vgpr7, $vgpr2, 0{E}"

# (rule, producer, consumer, {target: wait states}, (producer MIR, consumer MIR))
CASES = [
    ("mfma-read", BF16, ADD, {"gfx950": 8, "gfx942": None}, (BF16_MIR, ADD_MIR)),
    ("mfma-read", "v_mfma_f32_32x32x16_bf16 v[0:15], v[40:43], v[48:51], v[0:15]", ADD,
     {"gfx950": 12}, (f"{_r(0, 16)} = V_MFMA_F32_32X32X16_BF16_vgprcd_e64 {_r(40, 4)}, "
                      f"{_r(48, 4)}, {_r(0, 16)}, 0, 0, 0{E}", ADD_MIR)),
    ("mfma-read", "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[40:47], v[48:55], v[0:3], v30, v31",
     ADD, {"gfx950": 12}, (f"{_r(0, 4)} = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f8_f8_vgprcd_e64 "
                           f"{_r(40, 8)}, {_r(48, 8)}, {_r(0, 4)}, 0, 0, $vgpr30, $vgpr31, 0, 0{E}",
                           ADD_MIR)),
    ("mfma-read", "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[40:43], v[48:51], v[0:3], v30, v31 "
     "cbsz:4 blgp:4", ADD, {"gfx950": 8},
     (f"{_r(0, 4)} = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f4_f4_vgprcd_e64 {_r(40, 4)}, {_r(48, 4)}, "
      f"{_r(0, 4)}, 4, 4, $vgpr30, $vgpr31, 0, 0{E}", ADD_MIR)),
    ("mfma-read", "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[40:47], v[48:53], v[0:15] blgp:2", ADD,
     {"gfx950": 20}, (f"{_r(0, 16)} = V_MFMA_F32_32X32X64_F8F6F4_f8_f6_vgprcd_e64 {_r(40, 8)}, "
                      f"{_r(48, 6)}, {_r(0, 16)}, 0, 2{E}", ADD_MIR)),
    ("mfma-read", "v_mfma_f32_4x4x4_16b_f16 v[0:3], v[40:41], v[42:43], v[0:3]", ADD,
     {"gfx950": 5, "gfx942": 5}, (f"{_r(0, 4)} = V_MFMA_F32_4X4X4F16_vgprcd_e64 {_r(40, 2)}, "
                                  f"{_r(42, 2)}, {_r(0, 4)}, 0, 0, 0{E}", ADD_MIR)),
    ("mfma-read", "v_smfmac_f32_16x16x128_fp8_fp8 v[0:3], v[40:43], v[48:55], v60", ADD,
     {"gfx950": 8}, (f"{_r(0, 4)} = V_SMFMAC_F32_16X16X128_FP8_FP8_e64 {_r(40, 4)}, {_r(48, 8)}, "
                     f"$vgpr60, 0, 0, {_r(0, 4)}{E}", ADD_MIR)),
    ("mfma-read", BF16, "global_store_dword v[60:61], v1, off", {"gfx950": 8},
     (BF16_MIR, "GLOBAL_STORE_DWORD $vgpr60_vgpr61, $vgpr1, 0, 0, implicit $exec")),
    ("mfma-srcc", BF16, "v_mfma_f32_16x16x32_bf16 v[2:5], v[40:43], v[48:51], v[2:5]",
     {"gfx950": 6}, (BF16_MIR, f"{_r(2, 4)} = V_MFMA_F32_16X16X32_BF16_vgprcd_e64 {_r(40, 4)}, "
                               f"{_r(48, 4)}, {_r(2, 4)}, 0, 0, 0{E}")),
    ("mfma-srcab", BF16, "v_mfma_f32_16x16x32_bf16 v[8:11], v[0:3], v[48:51], v[8:11]",
     {"gfx950": 8}, (BF16_MIR, f"{_r(8, 4)} = V_MFMA_F32_16X16X32_BF16_vgprcd_e64 {_r(0, 4)}, "
                               f"{_r(48, 4)}, {_r(8, 4)}, 0, 0, 0{E}")),
    ("mfma-waw", BF16, "v_mov_b32_e32 v1, 0", {"gfx950": 8},
     (BF16_MIR, f"$vgpr1 = V_MOV_B32_e32 0{E}")),
    ("mfma-read", F64, ADD, {"gfx950": 19, "gfx942": 11}, (F64_MIR, ADD_MIR)),
    ("mfma-read", F64, "global_store_dword v[60:61], v1, off", {"gfx950": 18, "gfx942": 18},
     (F64_MIR, "GLOBAL_STORE_DWORD $vgpr60_vgpr61, $vgpr1, 0, 0, implicit $exec")),
    ("mfma-srcab", F64, "v_mfma_f64_16x16x4_f64 v[8:15], v[0:1], v[42:43], v[8:15]",
     {"gfx950": 19, "gfx942": 11},
     (F64_MIR, f"{_r(8, 8)} = V_MFMA_F64_16X16X4F64_vgprcd_e64 {_r(0, 2)}, {_r(42, 2)}, "
               f"{_r(8, 8)}, 0, 0, 0{E}")),
    ("mfma-srcc", F64, "v_mfma_f32_16x16x4_f32 v[2:5], v40, v41, v[2:5]",
     {"gfx950": 17, "gfx942": 9},
     (F64_MIR, f"{_r(2, 4)} = V_MFMA_F32_16X16X4F32_vgprcd_e64 $vgpr40, $vgpr41, {_r(2, 4)}, "
               f"0, 0, 0{E}")),
    ("valu-vgpr-permlane", "v_mov_b32_e32 v1, 0", "v_permlane16_swap_b32_e32 v1, v2",
     {"gfx950": 2}, (f"$vgpr1 = V_MOV_B32_e32 0{E}",
                     "$vgpr1, $vgpr2 = V_PERMLANE16_SWAP_B32_e32 $vgpr1, $vgpr2, implicit $exec")),
    ("valu-vgpr-permlane", "v_mov_b32_e32 v2, 0", "v_permlane32_swap_b32_e32 v1, v2",
     {"gfx950": 2}, (f"$vgpr2 = V_MOV_B32_e32 0{E}",
                     "$vgpr1, $vgpr2 = V_PERMLANE32_SWAP_B32_e32 $vgpr1, $vgpr2, implicit $exec")),
    ("vcmpx-exec-permlane", "v_cmpx_eq_u32_e64 s[0:1], v5, v6", "v_permlane16_swap_b32_e32 v1, v2",
     {"gfx950": 4}, ("$sgpr0_sgpr1 = V_CMPX_EQ_U32_e64 $vgpr5, $vgpr6, implicit-def $exec, "
                     "implicit $exec",
                     "$vgpr1, $vgpr2 = V_PERMLANE16_SWAP_B32_e32 $vgpr1, $vgpr2, implicit $exec")),
    ("dst-sel-valu", FP4 + " op_sel:[0,0,1,0]", "v_add_u32_e32 v20, v2, v21", {"gfx950": 1},
     (FP4_MIR.format(4), "$vgpr20 = V_ADD_U32_e32 $vgpr2, $vgpr21, implicit $exec")),
    ("dst-sel-valu", FP4 + " op_sel:[0,0,1,0]", "v_mov_b32_e32 v2, 0", {"gfx950": 1},
     (FP4_MIR.format(4), f"$vgpr2 = V_MOV_B32_e32 0{E}")),
    ("dst-sel-valu", FP4, "v_add_u32_e32 v20, v2, v21", {"gfx950": 0},
     (FP4_MIR.format(0), "$vgpr20 = V_ADD_U32_e32 $vgpr2, $vgpr21, implicit $exec")),
    ("dst-sel-valu", "v_cvt_scalef32_sr_pk_fp4_f32 v0, v[10:11], v1, v3",
     "v_add_u32_e32 v20, v0, v21", {"gfx950": 1},
     (f"$vgpr0 = V_CVT_SCALEF32_SR_PK_FP4_F32_e64 0, $vgpr10_vgpr11, 0, $vgpr1, 0, $vgpr3, "
      f"$vgpr0, 0{E}", "$vgpr20 = V_ADD_U32_e32 $vgpr0, $vgpr21, implicit $exec")),
    ("dst-sel-valu", "v_xor_b32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD "
     "src0_sel:DWORD src1_sel:DWORD", "v_mov_b32_e32 v0, 0", {"gfx950": 1, "gfx942": 0},
     ("$vgpr0 = V_XOR_B32_sdwa 0, $vgpr1, 0, $vgpr2, 0, 5, 0, 6, 6, implicit $exec",
      f"$vgpr0 = V_MOV_B32_e32 0{E}")),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("rule, producer, consumer, need, mir", CASES, ids=IDS)
def test_rule(rule, producer, consumer, need, mir):
    for target, n in need.items():
        if n is None:
            continue
        found = _problems([producer, consumer], target, rule)
        if n == 0:
            assert not found, (target, found)
            continue
        assert [(p.index, p.producer, p.required, p.actual) for p in found] == [(1, 0, n, 0)], \
            (target, found)
        assert not _problems([producer, *nops(n), consumer], target, rule), target
        if 2 <= n <= MAX_LOOKBACK:
            short = _problems([producer, *nops(n - 1), consumer], target, rule)
            assert short and short[0].actual == n - 1, target


def _llc() -> str:
    try:
        tc = find_toolchain("gfx950")
    except ToolchainError as exc:
        pytest.skip(str(exc))
    llc = tc.path("llc")
    if not llc.exists():
        pytest.skip(f"no llc beside {tc.describe()}")
    return str(llc)


def _llc_waits(llc: str, cpu: str, producer: str, consumer: str) -> int:
    mir = f"---\nname: t\nbody: |\n  bb.0:\n    {producer}\n    {consumer}\n    S_ENDPGM 0\n...\n"
    out = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}",
                          "-run-pass=post-RA-hazard-rec", "-x", "mir", "-o", "-", "-"],
                         input=mir, capture_output=True, text=True, timeout=60, check=True).stdout
    return sum(int(n) + 1 for n in re.findall(r"S_NOP (\d+)", out.split("bb.0:")[1]))


@pytest.mark.parametrize("rule, producer, consumer, need, mir", CASES, ids=IDS)
def test_llc_agrees(rule, producer, consumer, need, mir):
    """The expectations above are what LLVM's own recognizer inserts for gfx950."""
    assert _llc_waits(_llc(), "gfx950", *mir) == need["gfx950"]


def test_gfx950_mfma_passes():
    """Passes (4 cycles each) of the MFMAs AITer's gfx950 kernels use (LLVM 22 scheduling)."""
    want = {
        "v_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]": 4,
        "v_mfma_f32_16x16x32_f16 v[0:3], v[4:7], v[8:11], v[0:3]": 4,
        "v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], v[0:15]": 8,
        "v_mfma_i32_32x32x32_i8 v[0:15], v[16:19], v[20:23], v[0:15]": 8,
        "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]": 8,
        "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[12:15], v[0:3] cbsz:4 blgp:4": 4,
        "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[12:19], v[0:3] cbsz:4": 8,
        "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:19], v[20:23], v[0:15], v1, v2 "
        "cbsz:4 blgp:4": 8,
        "v_smfmac_f32_16x16x128_fp8_fp8 v[0:3], v[4:7], v[8:15], v16": 4,
    }
    assert {t: effects(t).passes("gfx950") for t in want} == want
    assert all(effects(t).xdl("gfx950") for t in want)


def test_permlane_swap_reads_and_writes_both():
    e = effects("v_permlane32_swap_b32_e32 v1, v2")
    assert not e.unknown and e.writes == e.reads & e.writes and e.ndefs == 2
    # an MFMA result read by a swap is an MFMA-read hazard like any VALU read
    found = _problems([BF16, "v_permlane16_swap_b32_e32 v5, v1"], "gfx950", "mfma-read")
    assert [(p.required, p.actual) for p in found] == [(8, 0)]


def test_llc_agrees_at_the_lookback_edge():
    prod = (f"{_r(0, 16)} = V_MFMA_F32_32X32X64_F8F6F4_f8_f6_vgprcd_e64 {_r(40, 8)}, "
            f"{_r(48, 6)}, {_r(0, 16)}, 0, 2{E}")
    nop19 = "S_NOP 7\n    S_NOP 7\n    S_NOP 2"
    assert _llc_waits(_llc(), "gfx950", prod + "\n    " + nop19, ADD_MIR) == 19
    text = "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[40:47], v[48:53], v[0:15] blgp:2"
    assert not _problems([text, *nops(19), ADD], "gfx950", "mfma-read")


# --- on AITer's gfx950 code -------------------------------------------------------

def _mxfp4():
    from asmevo.targets import get_target
    from tests.conftest import ROOT
    path = ROOT / "tests" / "data" / "aiter_gfx950" / \
        "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128.co"
    t = get_target("amdgpu")
    co = t.load(path.read_bytes(), path=str(path))
    return co, t.recover(co)


def test_static_gate_on_aiter_gfx950_code():
    """AITer's kernel breaks LLVM's VALU-SGPR rule 18 times: K0's own problems, not
    held against an edit. Deleting the s_nop AITer put between a VALU write and the
    v_permlane32_swap reading it adds gfx950's permlane hazard: refused."""
    from collections import Counter
    from dataclasses import replace
    from asmevo.targets.amdgpu.analysis.gate import function_problems, static_gate
    co, k0 = _mxfp4()
    fn = k0.kernels[0]
    own = Counter(p.rule for p in function_problems(fn, co.target))
    assert own["valu-sgpr-valu"] == 18
    same = k0.with_function(replace(fn, edited=True))
    assert static_gate(same, co.target, k0=k0) is None
    ins = fn.instructions
    j = next(k for k in range(1, len(ins) - 1) if ins[k].mnemonic == "s_nop"
             and ins[k + 1].mnemonic.startswith("v_permlane32_swap"))
    v = static_gate(k0.replace_window(fn.name, j, j + 1, []), co.target, k0=k0)
    assert v is not None and v.details["rule"] == "valu-vgpr-permlane"
    assert (v.details["required"], v.details["actual"]) == (2, 0)
