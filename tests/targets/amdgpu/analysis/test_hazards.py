"""Manual wait states on gfx90a and gfx942.

Every expected count below was produced by LLVM 19 itself: ``llc
-run-pass=post-RA-hazard-rec`` on the same pair written as MIR (see the
module docstring of hazards.py).
"""
from __future__ import annotations

import time

import pytest

from asmevo.targets.amdgpu.analysis.hazards import check_hazards
from tests.targets.amdgpu.analysis.helpers import corpus_functions, make_fn

MFMA32 = {"gfx942": "v_mfma_f32_32x32x8_f16", "gfx90a": "v_mfma_f32_32x32x8f16"}
MFMA16 = {"gfx942": "v_mfma_f32_16x16x16_f16", "gfx90a": "v_mfma_f32_16x16x16f16"}
SGEMM16 = {"gfx942": "v_mfma_f32_16x16x4_f32", "gfx90a": "v_mfma_f32_16x16x4f32"}
CMPX = "v_cmpx_eq_u32_e64 s[0:1], v0, v1"
DPP = "v_mov_b32_dpp v2, v3 row_shr:1 row_mask:0xf bank_mask:0xf"

# (rule, producer, consumer, {target: required wait states (0: no hazard)})
CASES = [
    ("mfma-read", "{m32} v[0:15], v[20:21], v[22:23], v[0:15]", "v_add_f32_e32 v30, v0, v31",
     {"gfx942": 11, "gfx90a": 19}),
    ("mfma-read", "{m16} v[0:3], v[20:21], v[22:23], v[0:3]", "v_add_f32_e32 v30, v0, v31",
     {"gfx942": 7, "gfx90a": 11}),
    ("mfma-read", "{s16} v[0:3], v20, v22, v[0:3]", "v_add_f32_e32 v30, v0, v31",
     {"gfx942": 10, "gfx90a": 11}),
    ("mfma-read", "{m16} v[0:3], v[20:21], v[22:23], v[0:3]", "global_store_dword v[8:9], v1, off",
     {"gfx942": 7, "gfx90a": 11}),
    ("mfma-srcc", "{m16} a[0:3], v[20:21], v[22:23], a[0:3]",
     "{m16} a[0:3], v[20:21], v[22:23], a[0:3]", {"gfx942": 0, "gfx90a": 0}),
    ("mfma-srcc", "{m16} a[0:3], v[20:21], v[22:23], a[0:3]",
     "{m16} a[2:5], v[20:21], v[22:23], a[2:5]", {"gfx942": 5, "gfx90a": 8}),
    ("mfma-srcab", "{m16} v[0:3], v[20:21], v[22:23], v[0:3]",
     "{m16} v[4:7], v[0:1], v[22:23], v[4:7]", {"gfx942": 7, "gfx90a": 11}),
    ("mfma-srcc-war", "{m16} v[0:3], v[20:21], v[22:23], v[8:11]", "v_mov_b32_e32 v8, 0",
     {"gfx942": 3, "gfx90a": 7}),
    ("mfma-waw", "{m16} v[0:3], v[20:21], v[22:23], v[0:3]", "v_mov_b32_e32 v2, 0",
     {"gfx942": 7, "gfx90a": 11}),
    ("valu-vgpr-mfma", "v_mov_b32_e32 v20, 0", "{m16} a[0:3], v[20:21], v[22:23], a[0:3]",
     {"gfx942": 2, "gfx90a": 2}),
    ("valu-exec-mfma", CMPX, "{m16} a[0:3], v[20:21], v[22:23], a[0:3]",
     {"gfx942": 4, "gfx90a": 4}),
    ("valu-sgpr-valu", "v_cmp_eq_u32_e64 s[0:1], v0, v1", "v_cndmask_b32_e64 v2, v3, v4, s[0:1]",
     {"gfx942": 2, "gfx90a": 0}),
    ("valu-sgpr-valu", "v_cmp_eq_u32_e32 vcc, v0, v1", "v_cndmask_b32_e32 v2, v3, v4, vcc",
     {"gfx942": 2, "gfx90a": 0}),
    ("valu-sgpr-valu", "v_add_co_u32_e64 v0, s[0:1], v1, v2",
     "v_addc_co_u32_e64 v3, s[2:3], v4, v5, s[0:1]", {"gfx942": 2, "gfx90a": 0}),
    ("trans-valu", "v_exp_f32_e32 v0, v1", "v_add_f32_e32 v2, v0, v1",
     {"gfx942": 1, "gfx90a": 0}),
    ("dst-sel-valu", "v_xor_b32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD "
     "src0_sel:DWORD src1_sel:DWORD", "v_add_u32_e32 v3, v0, v4", {"gfx942": 1, "gfx90a": 0}),
    ("dst-sel-valu", "v_pk_add_f32 v[0:1], v[2:3], v[4:5]", "v_mul_f32_e32 v6, v1, v7",
     {"gfx942": 1, "gfx90a": 0}),
    ("dst-sel-valu", "v_pk_add_f32 v[0:1], v[2:3], v[4:5] op_sel_hi:[0,1]",
     "v_mul_f32_e32 v6, v1, v7", {"gfx942": 0, "gfx90a": 0}),
    ("store-data-valu", "global_store_dwordx4 v[0:1], v[2:5], off", "v_mov_b32_e32 v3, 0",
     {"gfx942": 2, "gfx90a": 1}),
    ("store-data-valu", "buffer_store_dwordx4 v[2:5], off, s[0:3], 0", "v_mov_b32_e32 v3, 0",
     {"gfx942": 2, "gfx90a": 1}),
    ("store-data-valu", "buffer_store_dwordx4 v[2:5], off, s[0:3], s4", "v_mov_b32_e32 v3, 0",
     {"gfx942": 0, "gfx90a": 0}),
    ("store-data-valu", "global_store_dwordx2 v[0:1], v[2:3], off", "v_mov_b32_e32 v3, 0",
     {"gfx942": 0, "gfx90a": 0}),
    ("valu-sgpr-vmem", "v_readfirstlane_b32 s4, v0", "global_load_dword v1, v2, s[4:5]",
     {"gfx942": 5, "gfx90a": 5}),
    ("valu-sgpr-lane-select", "v_readfirstlane_b32 s0, v0", "v_readlane_b32 s1, v1, s0",
     {"gfx942": 4, "gfx90a": 4}),
    ("valu-exec-rwlane", CMPX, "v_readlane_b32 s1, v1, 3", {"gfx942": 4, "gfx90a": 0}),
    ("valu-vgpr-readlane", "v_mov_b32_e32 v1, 0", "v_readlane_b32 s1, v1, 3",
     {"gfx942": 1, "gfx90a": 0}),
    ("valu-exec-dpp", CMPX, DPP, {"gfx942": 5, "gfx90a": 5}),
    ("vgpr-dpp", "v_mov_b32_e32 v3, 0", DPP, {"gfx942": 2, "gfx90a": 2}),
    ("valu-vcc-div-fmas", "v_cmp_eq_u32_e32 vcc, v0, v1", "v_div_fmas_f32 v2, v3, v4, v5",
     {"gfx942": 4, "gfx90a": 4}),
    ("setreg-getreg", "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s0",
     "s_getreg_b32 s1, hwreg(HW_REG_MODE, 0, 4)", {"gfx942": 2, "gfx90a": 2}),
    ("setreg-setreg", "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s0",
     "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s1", {"gfx942": 2, "gfx90a": 2}),
    ("salu-m0", "s_mov_b32 m0, s0", "s_movrels_b32 s1, s2", {"gfx942": 1, "gfx90a": 1}),
    ("salu-m0", "s_mov_b32 m0, s0", "s_sendmsg sendmsg(MSG_INTERRUPT)",
     {"gfx942": 1, "gfx90a": 1}),
    ("soft-clause", "s_load_dwordx4 s[4:7], s[0:1], 0x0", "s_load_dword s0, s[0:1], 0x10",
     {"gfx942": 1, "gfx90a": 1, "gfx942:xnack-": 0}),
    ("soft-clause", "global_load_dword v2, v[0:1], off", "global_store_dword v[0:1], v3, off",
     {"gfx942": 1, "gfx942:xnack-": 0}),
]


def _fill(line: str, target: str) -> str:
    fam = "gfx90a" if target.startswith("gfx90a") else "gfx942"
    return line.format(m32=MFMA32[fam], m16=MFMA16[fam], s16=SGEMM16[fam])


def nops(n: int) -> list[str]:
    """n wait states as LLVM writes them: s_nop 7 (8 states) at a time."""
    out = []
    while n > 0:
        out.append(f"s_nop {min(n, 8) - 1}")
        n -= min(n, 8)
    return out


def _problems(lines, target, rule):
    fn = make_fn("\n".join(lines + ["s_endpgm"]))
    return [p for p in check_hazards(fn, target) if p.rule == rule]


@pytest.mark.parametrize("rule, producer, consumer, need", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule(rule, producer, consumer, need):
    for target, n in need.items():
        p, c = _fill(producer, target), _fill(consumer, target)
        found = _problems([p, c], target, rule)
        if n == 0:
            assert not found, (target, found)
            continue
        assert len(found) == 1, (target, found)
        assert (found[0].index, found[0].producer, found[0].required, found[0].actual) == \
            (1, 0, n, 0), (target, found[0])
        # exactly n wait states: s_nop n-1 suffices, one fewer does not
        assert not _problems([p, *nops(n), c], target, rule), target
        if n >= 2:
            short = _problems([p, *nops(n - 1), c], target, rule)
            assert short and short[0].actual == n - 1, target


def test_other_instructions_count_one_wait_state_each():
    lines = ["v_cmp_eq_u32_e64 s[0:1], v0, v1", "s_mov_b32 s5, 0", "s_waitcnt lgkmcnt(0)",
             "v_cndmask_b32_e64 v2, v3, v4, s[0:1]"]
    assert not _problems(lines, "gfx942", "valu-sgpr-valu")
    short = _problems(lines[:2] + lines[3:], "gfx942", "valu-sgpr-valu")
    assert [(p.required, p.actual) for p in short] == [(2, 1)]


def test_minimum_over_predecessors():
    text = """
        v_cmp_eq_u32_e64 s[0:1], v0, v1
        s_cbranch_scc1 join
        s_nop 3
    join:
        v_cndmask_b32_e64 v2, v3, v4, s[0:1]
        s_endpgm"""
    found = [p for p in check_hazards(make_fn(text), "gfx942") if p.rule == "valu-sgpr-valu"]
    assert [(p.index, p.required, p.actual) for p in found] == [(3, 2, 1)]


def test_loop_back_edge():
    text = """
    loop:
        v_cndmask_b32_e64 v2, v3, v4, s[0:1]
        v_cmp_eq_u32_e64 s[0:1], v0, v2
        s_cbranch_vccnz loop
        s_endpgm"""
    found = [p for p in check_hazards(make_fn(text), "gfx942") if p.rule == "valu-sgpr-valu"]
    assert [(p.index, p.producer, p.actual) for p in found] == [(0, 1, 1)]


def test_closest_producer_decides():
    # the second MFMA fully rewrites a[0:3]: the SrcC read sees it, not the first one
    m = MFMA16["gfx942"]
    text = f"""
        {m} a[0:3], v[20:21], v[22:23], a[4:7]
        {m} a[0:3], v[20:21], v[22:23], a[0:3]
        {m} a[0:3], v[20:21], v[22:23], a[0:3]
        s_endpgm"""
    assert not [p for p in check_hazards(make_fn(text), "gfx942") if p.rule == "mfma-srcc"]


# --- the corpus ------------------------------------------------------------------

FUNCS = corpus_functions()


@pytest.mark.parametrize("name, co, prog, fn", FUNCS, ids=[f[0] for f in FUNCS])
def test_corpus_passes_as_compiled(name, co, prog, fn):
    """LLVM inserted exactly these NOPs: a report means a rule or a count is wrong."""
    assert check_hazards(fn, co.target) == []


def _hazard_nops(fn):
    """s_nops inside the code (not the kernarg-preload pad Triton jumps over,
    nor the padding after s_endpgm)."""
    ins = fn.instructions
    end = next((k for k, i in enumerate(ins) if i.mnemonic == "s_endpgm"), len(ins))
    jumped = set()
    for k, i in enumerate(ins[:end]):
        if i.mnemonic == "s_branch":
            j = k + 1
            while j < end and ins[j].mnemonic == "s_nop":
                jumped.add(j)
                j += 1
    return [k for k, i in enumerate(ins[:end]) if i.mnemonic == "s_nop" and k not in jumped]


def test_corpus_deleting_a_compiler_nop_is_reported():
    rules: dict[str, int] = {}
    for name, co, prog, fn in FUNCS:
        if name.startswith("asm_"):
            continue
        for k in _hazard_nops(fn):
            edited = prog.replace_window(fn.name, k, k + 1, []).function(fn.name)
            found = check_hazards(edited, co.target)
            assert found, f"{name}: deleting #{k} went unnoticed"
            rules[found[0].rule] = rules.get(found[0].rule, 0) + 1
    assert {"vgpr-dpp", "valu-sgpr-valu", "dst-sel-valu", "trans-valu",
            "soft-clause", "valu-vgpr-readlane"} <= set(rules), rules


def test_handwritten_nop_after_vcmp_is_not_required():
    """asm_copy pads ``v_cmp_e64 s[12:13]`` -> ``s_and_saveexec_b64 .., s[12:13]``
    with ``s_nop 1``. No rule asks for it: an SALU read of a VALU-written SGPR is
    interlocked, and LLVM emits that pair back to back (see tri_matmul_fp16)."""
    name, co, prog, fn = next(f for f in FUNCS if f[0].startswith("asm_copy"))
    k = next(k for k, i in enumerate(fn.instructions) if i.mnemonic == "s_nop")
    edited = prog.replace_window(fn.name, k, k + 1, []).function(fn.name)
    assert check_hazards(edited, co.target) == []
    # but the same SGPR pair read by a VALU does need the padding on gfx942
    vread = prog.replace_window(fn.name, k, k + 1, [
        type(fn.instructions[0])("v_cndmask_b32_e64 v9, 0, 1, s[12:13]")]).function(fn.name)
    assert [p.rule for p in check_hazards(vread, co.target)] == ["valu-sgpr-valu"]


def test_hazards_are_fast():
    name, co, prog, fn = next(f for f in FUNCS if "tri_matmul_fp16" in f[0])
    check_hazards(fn, co.target)
    start = time.perf_counter()
    check_hazards(fn, co.target)
    assert time.perf_counter() - start < 0.05


def test_window_constraints_list_met_and_violated_pairs_near_a_window():
    from asmevo.targets.amdgpu.analysis.hazards import window_constraints
    lines = ["v_cmp_eq_u32_e64 s[0:1], v0, v1", "s_mov_b32 s5, 0", "s_waitcnt lgkmcnt(0)",
             "v_cndmask_b32_e64 v2, v3, v4, s[0:1]", "v_add_u32_e32 v6, v7, v8"]
    fn = make_fn("\n".join(lines + ["s_endpgm"]))
    got = [(p.rule, p.producer, p.index, p.required, p.actual)
           for p in window_constraints(fn, "gfx942", 1, 3)]
    # the pair is met exactly (2 wait states between, the rule's need) and still reported:
    # moving one instruction out of the gap would break it
    assert got == [("valu-sgpr-valu", 0, 3, 2, 2)]
    assert not check_hazards(fn, "gfx942")
    # a window the pair does not touch, with no margin around it, names nothing
    assert window_constraints(fn, "gfx942", 4, 5, margin=0) == []
    # deleting the waits between producer and consumer: the pair is violated
    short = make_fn("\n".join([lines[0], lines[3], "s_endpgm"]))
    (p,) = window_constraints(short, "gfx942", 0, 2)
    assert (p.rule, p.required, p.actual) == ("valu-sgpr-valu", 2, 0)
    assert [(q.rule, q.index) for q in check_hazards(short, "gfx942")] == [("valu-sgpr-valu", 1)]
