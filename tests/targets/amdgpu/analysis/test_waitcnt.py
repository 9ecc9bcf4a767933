"""The GFX9 counter model: sufficiency, weakest placement, relaxation."""
from __future__ import annotations

import time

import pytest

from asmevo.targets.amdgpu.analysis.effects import effects, waitcnt_fields
from asmevo.targets.amdgpu.analysis.waitcnt import (State, check_waitcnts, recompute_waitcnts,
                                                    relax_waitcnts, window_states)
from asmevo.targets.amdgpu.program import Instruction
from tests.targets.amdgpu.analysis.helpers import corpus_functions, make_fn


def rules(text):
    return [(p.rule, p.index, p.producer, p.registers) for p in check_waitcnts(make_fn(text))]


def test_missing_vmcnt_is_a_raw():
    assert rules("""
        global_load_dword v1, v[2:3], off
        v_add_f32_e32 v4, v1, v1
        s_endpgm""") == [("raw", 1, 0, ("v1",))]


def test_vmcnt_counts_in_order():
    ok = """
        global_load_dword v1, v[2:3], off
        global_load_dword v4, v[2:3], off offset:4
        global_store_dword v[6:7], v8, off
        s_waitcnt vmcnt(2)
        v_add_f32_e32 v9, v1, v1
        s_waitcnt vmcnt(1)
        v_add_f32_e32 v9, v4, v4
        s_endpgm"""
    assert rules(ok) == []
    # vmcnt(2) leaves the second load (one younger op: the store) outstanding
    assert rules(ok.replace("vmcnt(1)", "vmcnt(2)")) == [("raw", 6, 1, ("v4",))]


def test_smem_needs_lgkmcnt_zero():
    text = """
        s_load_dword s0, s[4:5], 0x0
        s_load_dword s1, s[4:5], 0x4
        s_waitcnt lgkmcnt(1)
        v_mov_b32_e32 v0, s0
        s_endpgm"""
    assert rules(text) == [("raw", 3, 0, ("s0",))]
    assert rules(text.replace("lgkmcnt(1)", "lgkmcnt(0)")) == []


def test_lds_in_order_even_with_smem_mixed_in():
    text = """
        ds_read_b32 v1, v0
        s_load_dword s0, s[4:5], 0x0
        ds_read_b32 v2, v0 offset:4
        s_waitcnt lgkmcnt(1)
        v_mov_b32_e32 v3, v1
        v_mov_b32_e32 v3, s0
        s_endpgm"""
    # v1 has one younger LDS op: retired by lgkmcnt(1); s0 is not
    assert rules(text) == [("raw", 5, 1, ("s0",))]


def test_waw():
    assert rules("""
        global_load_dword v1, v[2:3], off
        v_mov_b32_e32 v1, 0
        s_endpgm""") == [("waw", 1, 0, ("v1",))]
    # loads of the same queue land in order: no wait between them
    assert rules("""
        global_load_dword v1, v[2:3], off
        global_load_dword v1, v[2:3], off offset:4
        s_waitcnt vmcnt(0)
        v_mov_b32_e32 v4, v1
        s_endpgm""") == []


def test_store_data_is_read_at_issue():
    assert rules("""
        global_store_dwordx4 v[0:1], v[2:5], off
        v_mov_b32_e32 v2, 0
        s_endpgm""") == []


def test_loop_carried_load():
    text = """
        s_mov_b32 s0, 0
        v_mov_b32_e32 v1, 0
    loop:
        v_add_f32_e32 v5, v1, v1
        global_load_dword v1, v[2:3], off
        s_add_u32 s0, s0, 1
        s_cmp_lt_u32 s0, 4
        s_cbranch_scc1 loop
        s_waitcnt vmcnt(0)
        s_endpgm"""
    assert rules(text) == [("raw", 2, 3, ("v1",))]
    fixed = text.replace("        s_cbranch_scc1 loop", "        s_waitcnt vmcnt(0)\n"
                         "        s_cbranch_scc1 loop")
    assert rules(fixed) == []


def test_join_takes_the_worse_path():
    text = """
        global_load_dword v1, v[2:3], off
        s_cbranch_scc1 skip
        s_waitcnt vmcnt(0)
    skip:
        v_mov_b32_e32 v4, v1
        s_endpgm"""
    assert rules(text) == [("raw", 3, 0, ("v1",))]


def test_barrier_needs_lds_drained():
    text = """
        ds_write_b32 v1, v2
        s_barrier
        ds_read_b32 v3, v1
        s_waitcnt lgkmcnt(0)
        s_endpgm"""
    assert [r[0] for r in rules(text)] == ["barrier"]
    assert rules(text.replace("        s_barrier", "        s_waitcnt lgkmcnt(0)\n"
                              "        s_barrier")) == []


def test_flat_needs_both_counters():
    text = """
        flat_load_dword v1, v[2:3]
        s_waitcnt vmcnt(0)
        v_mov_b32_e32 v4, v1
        s_endpgm"""
    assert [r[0] for r in rules(text)] == ["raw"]
    assert rules(text.replace("vmcnt(0)", "vmcnt(0) lgkmcnt(0)")) == []


def test_encoding_limits():
    assert [r[0] for r in rules("s_waitcnt vmcnt(64)\ns_endpgm")] == ["encoding"]
    assert [r[0] for r in rules("s_waitcnt lgkmcnt(16)\ns_endpgm")] == ["encoding"]
    assert rules("s_waitcnt vmcnt(63) lgkmcnt(15)\ns_endpgm") == []


def test_nothing_needed_at_endpgm():
    assert rules("global_load_dword v1, v[2:3], off\ns_endpgm") == []


def test_recompute_weakest_placement():
    window = """global_load_dword v1, v[2:3], off
global_load_dword v4, v[2:3], off offset:4
s_load_dword s0, s[4:5], 0x0
ds_read_b32 v5, v6
ds_read_b32 v7, v6 offset:4
s_waitcnt vmcnt(0) lgkmcnt(0)
v_add_f32_e32 v8, v1, v1
v_add_f32_e32 v9, v5, v5
v_add_u32_e32 v10, s0, v4
v_add_f32_e32 v11, v7, v7
global_store_dword v[2:3], v8, off
s_endpgm""".splitlines()
    assert recompute_waitcnts(window) == """global_load_dword v1, v[2:3], off
global_load_dword v4, v[2:3], off offset:4
s_load_dword s0, s[4:5], 0x0
ds_read_b32 v5, v6
ds_read_b32 v7, v6 offset:4
s_waitcnt vmcnt(1)
v_add_f32_e32 v8, v1, v1
s_waitcnt lgkmcnt(1)
v_add_f32_e32 v9, v5, v5
s_waitcnt vmcnt(0) lgkmcnt(0)
v_add_u32_e32 v10, s0, v4
v_add_f32_e32 v11, v7, v7
global_store_dword v[2:3], v8, off
s_endpgm""".splitlines()


def test_recompute_respects_entry_and_exit():
    # an earlier load of v1 is still in flight when the window starts
    # default exit: drain everything
    pre = recompute_waitcnts(["global_load_dword v1, v[8:9], off"])
    assert pre == ["global_load_dword v1, v[8:9], off", "s_waitcnt vmcnt(0)"]
    assert recompute_waitcnts(["global_load_dword v1, v[8:9], off"], exit=State()) == pre
    fn = make_fn("""
        global_load_dword v1, v[8:9], off
        v_mov_b32_e32 v2, 0
        global_load_dword v3, v[8:9], off
        v_mov_b32_e32 v4, 0
        s_waitcnt vmcnt(0)
        v_add_f32_e32 v5, v1, v3
        s_endpgm""")
    entry, exit = window_states(fn, 1, 4)
    # inside the window nothing reads v1 or v3: no wait; the exit allows both pending
    assert recompute_waitcnts(["v_mov_b32_e32 v2, 0", "global_load_dword v3, v[8:9], off",
                               "v_mov_b32_e32 v4, 0"], entry, exit) == [
        "v_mov_b32_e32 v2, 0", "global_load_dword v3, v[8:9], off", "v_mov_b32_e32 v4, 0"]
    # reading v1 inside the window needs the older load: one younger op -> vmcnt(1)
    assert recompute_waitcnts(["global_load_dword v3, v[8:9], off",
                               "v_mov_b32_e32 v2, v1"], entry, exit) == [
        "global_load_dword v3, v[8:9], off", "s_waitcnt vmcnt(1)", "v_mov_b32_e32 v2, v1"]
    # a window may not leave more behind than the original: a new load of v6 must drain
    assert recompute_waitcnts(["global_load_dword v6, v[8:9], off"], entry, exit)[-1] \
        == "s_waitcnt vmcnt(0)"


def test_recompute_keeps_terminator_last():
    out = recompute_waitcnts(["global_load_dword v1, v[2:3], off", "s_branch next"])
    assert out == ["global_load_dword v1, v[2:3], off", "s_waitcnt vmcnt(0)", "s_branch next"]


def test_relax_keeps_positions_and_weakens():
    window = """global_load_dword v1, v[2:3], off
global_load_dword v4, v[2:3], off offset:4
ds_read_b32 v5, v6
s_waitcnt vmcnt(0) lgkmcnt(0)
v_add_f32_e32 v8, v1, v1
v_add_f32_e32 v9, v5, v5
s_waitcnt vmcnt(0)
v_add_f32_e32 v10, v4, v4
s_waitcnt lgkmcnt(0)
s_endpgm""".splitlines()
    assert relax_waitcnts(window) == """global_load_dword v1, v[2:3], off
global_load_dword v4, v[2:3], off offset:4
ds_read_b32 v5, v6
s_waitcnt vmcnt(1) lgkmcnt(0)
v_add_f32_e32 v8, v1, v1
v_add_f32_e32 v9, v5, v5
s_waitcnt vmcnt(0)
v_add_f32_e32 v10, v4, v4
s_endpgm""".splitlines()


def test_relax_adds_a_wait_the_original_lacked():
    assert relax_waitcnts(["global_load_dword v1, v[2:3], off", "v_mov_b32_e32 v2, v1",
                           "s_endpgm"]) == [
        "global_load_dword v1, v[2:3], off", "s_waitcnt vmcnt(0)", "v_mov_b32_e32 v2, v1",
        "s_endpgm"]


# --- the corpus ------------------------------------------------------------------

FUNCS = corpus_functions(compiled_only=True)


@pytest.mark.parametrize("name, co, prog, fn", FUNCS, ids=[f[0] for f in FUNCS])
def test_corpus_waits_are_sufficient(name, co, prog, fn):
    """LLVM's own waits are sufficient: any report here is a modelling error."""
    assert check_waitcnts(fn) == []


def test_shipped_aiter_kernels_report_exactly_their_known_waits():
    """AITer's hand-written dq_convert and pa synchronize LDS writes with s_barrier without a
    lgkmcnt wait the model can see; the GEMMs, fmoe and pa double-buffer LDS DMA loads (an LDS
    read or barrier with the DMA into the other buffer still in flight, which the model, not
    following M0 addresses, cannot tell apart): only 'lds-dma' reports; the other two nothing."""
    known = {"bwd_hd64_dq_convert_fp16.co", "pa_bf16_noquant_gqa8_1tg_4w.co"}
    dma = {"bf16gemm_fp32bf16_tn_32x64_bshuffle_splitk.co",
           "fmoe_stage1_bf16_pertokenFp8_g1u1_16x64_6tg_pf2.co",
           "fp8gemm_bf16_blockscale_BpreShuffle_32x128.co",
           "I8gemm_bf16_perTokenI8_BpreShuffle_16x128.co", "pa_bf16_noquant_gqa8_1tg_4w.co"}
    shipped = [f for f in corpus_functions() if f not in FUNCS]
    assert len(shipped) == 8
    for name, co, prog, fn in shipped:
        obj = name.split(":")[0]
        rules = {p.rule for p in check_waitcnts(fn)}
        assert bool(rules - {"lds-dma"}) == (obj in known), name
        assert ("lds-dma" in rules) == (obj in dma), name


def _guarding_waits(fn):
    """Independent of the model: in one block, a load L, then wait W with no other
    wait between, then (before the next wait) an instruction reading L's result."""
    ins = fn.instructions
    out = []
    for b in fn.blocks():
        for w in range(b.start, b.end):
            if ins[w].mnemonic != "s_waitcnt":
                continue
            nxt = next((k for k in range(w + 1, b.end) if ins[k].mnemonic == "s_waitcnt"), b.end)
            prv = max([k for k in range(b.start, w) if ins[k].mnemonic == "s_waitcnt"],
                      default=b.start - 1)
            loads = [effects(ins[k].text) for k in range(prv + 1, w)]
            dst = 0
            for e in loads:
                if e.mem_load:
                    dst |= e.writes
            if any(effects(ins[k].text).reads & dst for k in range(w + 1, nxt)):
                kinds = {c for e in loads if e.mem_load for c in e.counters}
                out.append((w, kinds))
    return out


def test_corpus_deleting_a_guarding_wait_is_reported():
    seen: dict[str, int] = {}
    for name, co, prog, fn in FUNCS:
        for w, kinds in _guarding_waits(fn)[:40]:
            edited = prog.replace_window(fn.name, w, w + 1, []).function(fn.name)
            assert check_waitcnts(edited), \
                f"{name}: deleting #{w} {fn.instructions[w].text} went unnoticed"
            for k in kinds:
                seen[k] = seen.get(k, 0) + 1
    assert seen.get("vm", 0) > 20 and seen.get("lgkm", 0) > 20, seen


@pytest.mark.parametrize("name", ["tri_matmul_fp16.gfx942.co:tri_matmul_fp16",
                                  "layernorm.gfx90a.co:layernorm",
                                  "tri_topk_gating.gfx942.co:tri_topk_gating"])
def test_corpus_recompute_and_relax_stay_sufficient(name):
    """Per block: strip the waits, recompute them (and separately relax them in
    place) against the block's own entry/exit states; the function stays clean."""
    _, co, prog, fn = next(f for f in FUNCS if f[0] == name)
    ins = fn.instructions
    for b in fn.blocks():
        if b.end - b.start < 2 or not any(i.mnemonic == "s_waitcnt"
                                          for i in ins[b.start:b.end]):
            continue
        entry, exit = window_states(fn, b.start, b.end)
        for op in (recompute_waitcnts, relax_waitcnts):
            new = op(ins[b.start:b.end], entry, exit)
            edited = prog.replace_window(fn.name, b.start, b.end, [Instruction(t) for t in new])
            assert check_waitcnts(edited.function(fn.name)) == [], (op.__name__, b)
            for t in new:
                if t.startswith("s_waitcnt"):
                    assert all(v >= 0 for v in waitcnt_fields(t).values())


def test_check_is_fast():
    fn = next(f for f in FUNCS if "tri_fused_add_rmsnorm" in f[0])[3]
    check_waitcnts(fn)
    start = time.perf_counter()
    check_waitcnts(fn)
    assert time.perf_counter() - start < 0.05


def test_an_lds_dma_load_is_retired_before_lds_is_read_or_published():
    """buffer_load_dword ... lds writes LDS through the VMEM queue and returns nothing into
    registers: a later ds_read (or s_barrier) needs vmcnt for it, which no register
    dependence shows. Relaxing or sinking the wait must keep it before the LDS access."""
    block = ["buffer_load_dword v1, s[4:7], 0 offen lds",
             "buffer_load_dword v5, v6, s[4:7], 0 offen",
             "s_waitcnt vmcnt(0)",
             "ds_read_b32 v2, v3",
             "s_waitcnt lgkmcnt(0)",
             "v_add_u32_e32 v4, v2, v5",
             "s_endpgm"]
    want = ["buffer_load_dword v1, s[4:7], 0 offen lds",
            "buffer_load_dword v5, v6, s[4:7], 0 offen",
            "s_waitcnt vmcnt(1)",
            "ds_read_b32 v2, v3",
            "s_waitcnt vmcnt(0) lgkmcnt(0)",
            "v_add_u32_e32 v4, v2, v5",
            "s_endpgm"]
    assert relax_waitcnts(block) == want
    assert recompute_waitcnts(block) == want
    barrier = ["buffer_load_dword v1, s[4:7], 0 offen lds", "s_barrier", "s_endpgm"]
    assert recompute_waitcnts(barrier) == [barrier[0], "s_waitcnt vmcnt(0)", *barrier[1:]]
    # an ordinary load into a VGPR does not hold LDS accesses back
    plain = ["buffer_load_dword v1, v6, s[4:7], 0 offen", "ds_read_b32 v2, v3",
             "s_waitcnt vmcnt(0) lgkmcnt(0)", "v_add_u32_e32 v4, v2, v1", "s_endpgm"]
    assert recompute_waitcnts(plain) == plain
