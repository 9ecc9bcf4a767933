"""Effects decoded from instruction text: registers, memory, counters, classes."""
from __future__ import annotations

import time

import pytest

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects, waitcnt_fields, waitcnt_text
from tests.targets.amdgpu.analysis.helpers import corpus_functions


def names(mask):
    return R.names(mask)


@pytest.mark.parametrize("text, writes, reads", [
    ("global_load_dwordx4 v[4:7], v[2:3], off offset:16", ["v[4:7]"], ["exec", "v[2:3]"]),
    ("global_store_dword v[6:7], v8, off", [], ["exec", "v[6:8]"]),
    ("ds_read_b128 v[0:3], v5 offset:64", ["v[0:3]"], ["exec", "v5"]),
    ("buffer_load_dword v1, v2, s[4:7], 0 offen", ["v1"], ["exec", "s[4:7]", "v2"]),
    ("s_load_dwordx2 s[4:5], s[0:1], 0x0", ["s[4:5]"], ["s[0:1]"]),
    ("v_cmp_gt_i32_e32 vcc, s10, v0", ["vcc"], ["exec", "s10", "v0"]),
    ("v_cndmask_b32_e32 v6, v6, v5, vcc", ["v6"], ["vcc", "exec", "v[5:6]"]),
    ("v_addc_co_u32_e32 v3, vcc, 0, v1, vcc", ["vcc", "v3"], ["vcc", "exec", "v1"]),
    ("v_div_fmas_f32 v4, v4, v5, v8", ["v4"], ["vcc", "exec", "v[4:5]", "v8"]),
    ("s_and_saveexec_b64 s[2:3], vcc", ["exec", "s[2:3]", "scc"], ["vcc", "exec"]),
    ("s_cbranch_vccnz .L1", [], ["vcc"]),
    ("s_cbranch_scc1 .L1", [], ["scc"]),
    ("s_cselect_b32 s0, 1, 0", ["s0"], ["scc"]),
    ("s_addc_u32 s1, s1, s5", ["s1", "scc"], ["s1", "s5", "scc"]),
    ("s_mov_b32 m0, s3", ["m0"], ["s3"]),
    ("v_readfirstlane_b32 s15, v0", ["s15"], ["exec", "v0"]),
    ("v_writelane_b32 v1, s0, 5", ["v1"], ["exec", "s0", "v1"]),
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]", ["a[0:15]"],
     ["exec", "v[0:3]", "a[0:15]"]),
    ("v_cmpx_eq_u32_e64 s[0:1], v0, v1", ["exec", "s[0:1]"], ["exec", "v[0:1]"]),
])
def test_registers(text, writes, reads):
    e = effects(text)
    assert not e.unknown
    assert names(e.writes) == writes
    assert names(e.reads) == reads


def test_partial_writes_do_not_kill():
    for t in ("v_writelane_b32 v1, s0, 5", "global_load_short_d16_hi v1, v[2:3], off",
              "v_fma_mixlo_f16 v2, s12, v2, neg(0)",
              "v_xor_b32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE "
              "src0_sel:DWORD src1_sel:DWORD"):
        e = effects(t)
        assert e.writes and not e.kills & e.writes, t
        assert e.reads & e.writes, t


@pytest.mark.parametrize("text, klass, counters, ordered, mem", [
    ("global_load_dword v1, v[2:3], off", "VMEM", ("vm",), True, "global"),
    ("global_store_dword v[2:3], v1, off", "VMEM", ("vm",), True, "global"),
    ("flat_load_dword v1, v[2:3]", "VMEM", ("vm", "lgkm"), False, "flat"),
    ("ds_write_b32 v1, v2 offset:4", "LDS", ("lgkm",), True, "lds"),
    ("s_load_dword s0, s[0:1], 0x10", "SMEM", ("lgkm",), False, "smem"),
    ("s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "MSG", ("lgkm",), False, "msg"),
    ("v_exp_f32_e32 v8, v8", "VALU_TRANS", (), True, None),
    ("v_dot2_f32_f16 v0, v1, v2, v3", "DOT", (), True, None),
    ("s_waitcnt vmcnt(0)", "WAITCNT", (), True, None),
    ("s_nop 1", "NOP", (), True, None),
    ("s_barrier", "BARRIER", (), True, None),
    ("s_cbranch_execz .L", "BRANCH", (), True, None),
    ("s_endpgm", "END", (), True, None),
])
def test_classes_and_counters(text, klass, counters, ordered, mem):
    e = effects(text)
    assert (e.klass, e.counters, e.ordered, e.mem) == (klass, counters, ordered, mem)


@pytest.mark.parametrize("text, p90a, p942, xdl942", [
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]", 16, 8, True),
    ("v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]", 8, 4, True),
    ("v_mfma_f32_4x4x4_16b_f16 a[0:3], v[0:1], v[2:3], a[0:3]", 2, 2, True),
    ("v_mfma_f32_32x32x2_f32 a[0:15], v0, v1, a[0:15]", 16, 16, False),
    ("v_mfma_f32_16x16x4_f32 a[0:3], v0, v1, a[0:3]", 8, 8, False),
    ("v_mfma_f32_32x32x4_2b_f16 a[0:31], v[0:1], v[2:3], a[0:31]", 16, 16, True),
    ("v_mfma_f32_16x16x8_xf32 a[0:3], v[0:1], v[2:3], a[0:3]", 8, 4, True),
    ("v_mfma_f64_16x16x4_f64 a[0:7], v[0:1], v[2:3], a[0:7]", 8, 8, False),
    ("v_mfma_f64_4x4x4_4b_f64 a[0:1], v[0:1], v[2:3], a[0:1]", 4, 4, False),
    ("v_mfma_i32_16x16x32_i8 a[0:3], v[0:1], v[2:3], a[0:3]", 8, 4, True),
])
def test_mfma_passes(text, p90a, p942, xdl942):
    """Passes as llvm-mca (LLVM 19 scheduling model) reports them."""
    e = effects(text)
    assert e.klass == "MFMA"
    assert e.passes("gfx90a") == p90a and e.passes("gfx942") == p942
    assert e.xdl("gfx942") == xdl942


def test_unknown_is_conservative_not_a_crash():
    for t in ("v_permlane16_b32 v0, v1, s0, s1", "bogus", "exp mrt0 v0, v0, v0, v0 done vm",
              "s_frob s0", "image_load v[0:3], v[4:5], s[8:15]"):
        e = effects(t)
        assert e.unknown and e.reads == R.ALL and e.writes == R.ALL and e.kills == 0
        assert e.fence


def test_swap_writes_both():
    e = effects("v_swap_b32 v0, v1")
    assert names(e.writes) == ["v[0:1]"] and not e.kills


def test_waitcnt_fields():
    assert waitcnt_fields("s_waitcnt vmcnt(0) lgkmcnt(0)") == {"vm": 0, "lgkm": 0}
    assert waitcnt_fields("s_waitcnt lgkmcnt(3)") == {"lgkm": 3}
    assert waitcnt_fields("s_waitcnt 0") == {"vm": 0, "exp": 0, "lgkm": 0}
    assert waitcnt_fields("s_waitcnt 0xc07f") == {"lgkm": 0}
    assert waitcnt_text(vm=1, lgkm=0) == "s_waitcnt vmcnt(1) lgkmcnt(0)"
    assert waitcnt_text() is None


def test_every_corpus_mnemonic_is_known():
    unknown = {i.mnemonic for _, _, _, f in corpus_functions() for i in f.instructions
               if effects(i.text).unknown}
    assert not unknown


def test_cached_by_text():
    t = "v_add_f32_e32 v2, v2, v4"
    assert effects(t) is effects(t)
    start = time.perf_counter()
    for _ in range(10000):
        effects(t)
    assert time.perf_counter() - start < 0.05
