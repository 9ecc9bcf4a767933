"""The symbolic semantics against the emulator, instruction by instruction: random and
edge states (NaN payloads, infinities, denormals, signed zeros, shift counts past the
width, EXEC patterns, addresses out of bounds and misaligned) run both ways must agree
bit for bit, and a broken row must be caught."""
from __future__ import annotations

import pytest

from asmevo.prove import check, sem_float, sem_vector
from asmevo.prove.term import to_fp
from asmevo.prove.z3env import z3

FORMS = [
    "v_add_u32_e32 v1, v2, v3", "v_sub_co_u32_e64 v1, s[4:5], v2, 17",
    "v_addc_co_u32_e32 v1, vcc, v2, v3, vcc", "v_mad_u64_u32 v[2:3], s[4:5], v1, v6, v[8:9]",
    "v_lshlrev_b32_e32 v1, v2, v3", "v_ashrrev_i64 v[2:3], v1, v[4:5]", "v_bfe_i32 v1, v2, v3, v4",
    "v_perm_b32 v1, v2, v3, v4", "v_lshl_add_u64 v[2:3], v[4:5], 3, v[6:7]",
    "v_add_f32_e32 v1, v2, v3", "v_fma_f32 v1, -v2, |v3|, v4", "v_max_f32_e64 v1, v2, v3 clamp",
    "v_med3_f32 v1, v2, v3, v4", "v_min_f16_e32 v1, v2, v3", "v_fma_f64 v[2:3], v[4:5], v[6:7], v[8:9]",
    "v_cvt_f16_f32_e32 v1, v2", "v_cvt_i32_f32_e32 v1, v2", "v_cvt_pkrtz_f16_f32 v1, v2, v3",
    "v_rndne_f32_e32 v1, v2", "v_add_f32_dpp v1, v2, v3 row_shr:1 row_mask:0xf bank_mask:0xd",
    "v_mov_b32_dpp v1, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1",
    "v_cmp_lt_f32_e64 s[4:5], -v1, v2", "v_cmpx_gt_u32_e32 vcc, v1, v2",
    "v_cmp_class_f32_e64 s[4:5], v1, v2", "v_cndmask_b32_e64 v1, v2, v3, s[4:5]",
    "v_readfirstlane_b32 s3, v1", "v_mbcnt_hi_u32_b32 v1, -1, v2",
    "s_add_u32 s0, s1, s2", "s_subb_u32 s0, s1, s2", "s_bfe_i64 s[2:3], s[4:5], 0x100004",
    "s_and_saveexec_b64 s[4:5], vcc", "s_cselect_b32 s1, s2, 17", "s_ff1_i32_b64 s1, s[2:3]",
    "s_cmpk_lt_i32 s1, 0xfff0", "s_load_dwordx2 s[2:3], s[4:5], 0x8",
    "global_load_dwordx2 v[4:5], v[2:3], off offset:8", "global_load_sbyte v1, v2, s[4:5]",
    "global_store_short_d16_hi v[2:3], v1, off", "global_store_dwordx2 v[2:3], v[4:5], off",
    "ds_read2_b32 v[2:3], v1 offset0:1 offset1:5", "ds_write_b16 v1, v2 offset:6",
    "ds_bpermute_b32 v1, v2, v3", "v_exp_f32_e32 v1, v2", "v_div_fmas_f32 v1, v2, v3, v4",
    "v_pk_add_f32 v[2:3], v[4:5], v[6:7]",
]


@pytest.mark.parametrize("text", FORMS)
def test_semantics_agree_with_the_emulator(text):
    out = check.check_text(text, cases=6)
    assert out.refused is None, out.refused
    assert out.cases > out.skipped
    assert out.disagreements == [], out.disagreements


def test_a_wrong_integer_row_is_caught(monkeypatch):
    dst, srcs, _ = sem_vector.INT["v_add_u32"]
    monkeypatch.setitem(sem_vector.INT, "v_add_u32", (dst, srcs, lambda a, b: a - b))
    assert check.check_text("v_add_u32_e32 v1, v2, v3", cases=4).disagreements


def test_a_wrong_zero_sign_rule_is_caught(monkeypatch):
    def fmax(a, b, ieee=True):          # no +0 > -0 rule
        return sem_float._nan_rules(a, b, z3.If(z3.fpGT(to_fp(a), to_fp(b)), a, b), ieee)
    monkeypatch.setitem(sem_float.FLOAT, "v_max_f32", ("f32", ("f32", "f32"), fmax))
    assert check.check_text("v_max_f32_e32 v1, v2, v3", cases=12).disagreements


def test_a_wrong_nan_choice_is_caught(monkeypatch):
    nan_bits = sem_float.nan_bits
    monkeypatch.setattr(sem_float, "nan_bits",
                        lambda m, name, srcs, w: nan_bits(m, name, srcs[::-1], w))
    assert check.check_text("v_mul_f32_e32 v1, v2, v3", cases=12).disagreements


def test_an_opaque_row_missing_an_input_is_caught(monkeypatch):
    from asmevo.prove import sem_opaque
    plan = sem_opaque.opaque_plan

    def short(ins):
        p = plan(ins)
        return p | {"srcs": p["srcs"][:-1]}
    monkeypatch.setattr(check, "opaque_plan", short)
    assert check.check_text("v_ldexp_f32 v1, v2, v3", cases=6).disagreements


def test_unmodeled_forms_are_refused_not_approximated():
    assert check.check_text("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]").refused
    assert check.check_text("flat_load_dword v1, v[2:3]").refused


def test_a_sample_of_every_templated_family_agrees_with_the_emulator():
    """Every 40th template form (each family of rows the prover models, in order: SALU,
    VALU integer and float, compares, memory, opaque), two states each; the whole set,
    corpus forms too, is `experiments/bench_proof.py --semantics`."""
    from asmevo.prove.forms import template_forms
    forms = template_forms()
    sample = forms[::40]
    assert len(forms) > 1000 and len(sample) >= 25
    checked = 0
    for text in sample:
        out = check.check_text(text, cases=2)
        assert out.disagreements == [], (text, out.disagreements)
        checked += out.refused is None and out.cases > out.skipped
    assert checked >= 0.9 * len(sample)
