"""Liveness over the CFG and the dependency DAG of a window."""
from __future__ import annotations

import time

import pytest

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.liveness import Liveness, dependency_dag
from tests.targets.amdgpu.analysis.helpers import corpus_functions, make_fn

LOOP = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_mov_b32 s10, 0
    v_mov_b32_e32 v1, 0
    s_waitcnt lgkmcnt(0)
loop:
    v_add_u32_e32 v1, s10, v1
    v_mov_b32_e32 v7, v1
    s_add_u32 s10, s10, 1
    s_cmp_lt_u32 s10, 4
    s_cbranch_scc1 loop
    v_mov_b32_e32 v2, s4
    v_mov_b32_e32 v3, s5
    global_store_dword v[2:3], v1, off
    s_endpgm
"""


def live(L, i):
    return R.names(L.before(i))


def test_loop_liveness():
    L = Liveness(make_fn(LOOP))
    assert live(L, 0) == ["exec", "s[0:1]"]
    # v1 and s10 stay live around the loop; v7 is written and never read
    assert live(L, 4) == ["exec", "s[4:5]", "s10", "v1"]
    assert live(L, 5) == ["exec", "s[4:5]", "s10", "v1"]
    assert "v7" not in live(L, 6)
    assert live(L, 8) == ["exec", "s[4:5]", "s10", "scc", "v1"]
    assert live(L, 9) == ["exec", "s[4:5]", "v1"]
    assert live(L, 10) == ["exec", "s5", "v[1:2]"]
    assert live(L, 11) == ["exec", "v[1:3]"]
    assert R.names(L.after(12)) == []        # after the store only s_endpgm remains
    li, lo = L.window(4, 6)
    assert R.names(li) == ["exec", "s[4:5]", "s10", "v1"]
    assert R.names(lo) == ["exec", "s[4:5]", "s10", "v1"]
    free = L.free(4, 9, "v")
    assert not free & (1 << (R.VGPR_BASE + 1)) and free & (1 << (R.VGPR_BASE + 8))


def test_partial_write_keeps_register_live():
    L = Liveness(make_fn("""
        v_mov_b32_e32 v1, 0
        v_writelane_b32 v1, s0, 5
        global_store_dword v[2:3], v1, off
        s_endpgm"""))
    assert L.before(1) & (1 << (R.VGPR_BASE + 1))


def test_leaving_the_function_keeps_everything_live():
    L = Liveness(make_fn("""
        v_mov_b32_e32 v1, 0
        s_setpc_b64 s[30:31]"""))
    assert L.after(0) & (1 << (R.VGPR_BASE + 200))


def test_kernel_entry_liveness_is_plausible():
    """At a kernel's first instruction only hardware-initialized registers may be
    live: user/system SGPRs, the workitem-id VGPRs, EXEC."""
    for name, co, prog, f in corpus_functions(compiled_only=True):   # AITer's pa reads AGPRs
        L = Liveness(f)                                                # before writing them
        entry = L.live_in[0]
        assert not entry & R.AGPR_MASK, name
        assert not entry & (R.VCC_MASK | R.SCC_MASK | R.M0_MASK), name
        assert not entry & R.SGPR_MASK & ~R.span(0, 31) & ~R.EXEC_MASK, name
        if "tri_" not in name:      # Triton code reads halves of packed pairs (op_sel_hi)
            assert not entry & R.VGPR_MASK & ~R.span(R.VGPR_BASE, R.VGPR_BASE + 2), name


def test_liveness_is_fast():
    fns = {n: f for n, _, _, f in corpus_functions()}
    f = fns["tri_matmul_fp16.gfx942.co:tri_matmul_fp16"]
    Liveness(f)
    start = time.perf_counter()
    L = Liveness(f)
    for i in range(len(f.instructions)):
        L.before(i)
    assert time.perf_counter() - start < 0.05


def kinds(dag, i, j):
    return sorted({e.kind for e in dag.edges if (e.src, e.dst) == (i, j)})


def test_dag_register_edges():
    dag = dependency_dag([
        "v_mov_b32_e32 v1, 0",              # 0
        "v_add_f32_e32 v2, v1, v1",         # 1 RAW on v1
        "v_mov_b32_e32 v1, 1",              # 2 WAR with 1, WAW with 0
        "s_add_u32 s0, s1, s2",             # 3 scc
        "s_cselect_b32 s3, 1, 0",           # 4 RAW on scc
        "v_mov_b32_e32 v9, 0",              # 5 free
    ])
    assert kinds(dag, 0, 1) == ["raw"]
    assert kinds(dag, 1, 2) == ["war"]
    assert kinds(dag, 0, 2) == ["waw"]
    assert kinds(dag, 3, 4) == ["raw"]
    assert not dag.preds[5]
    assert dag.respects([5, 0, 3, 1, 4, 2])
    assert not dag.respects([1, 0, 2, 3, 4, 5])


def test_dag_memory_and_fences():
    dag = dependency_dag([
        "global_load_dword v1, v[2:3], off",           # 0
        "global_load_dword v4, v[2:3], off offset:4",  # 1 load/load: free
        "global_store_dword v[6:7], v8, off",          # 2 store after loads: ordered
        "ds_read_b32 v9, v10",                         # 3 LDS vs global store: free
        "s_waitcnt vmcnt(0)",                          # 4 fence
        "v_mov_b32_e32 v11, 0",                        # 5 after the fence
        "s_nop 1",                                     # 6 free
        "s_load_dword s0, s[4:5], 0x0",                # 7
        "s_load_dword s1, s[4:5], 0x4",                # 8
    ])
    assert not kinds(dag, 0, 1)
    assert kinds(dag, 0, 2) == ["mem"] and kinds(dag, 1, 2) == ["mem"]
    assert not kinds(dag, 2, 3)
    assert kinds(dag, 3, 4) == ["order"] and kinds(dag, 4, 5) == ["order"]
    assert not dag.preds[6] and not dag.succs[6]
    assert not kinds(dag, 7, 8)


def test_dag_exec_write_orders_vector_ops():
    dag = dependency_dag([
        "v_mov_b32_e32 v1, 0",
        "s_and_saveexec_b64 s[2:3], vcc",
        "v_mov_b32_e32 v2, 0",
        "s_add_u32 s8, s8, 1",
    ])
    assert "war" in kinds(dag, 0, 1) and "raw" in kinds(dag, 1, 2)
    assert kinds(dag, 1, 3) == ["waw"]   # only SCC: both write it


def test_dag_store_independence_needs_uniform_address():
    same_lane_addr = dependency_dag(["global_store_dword v[2:3], v1, off",
                                     "global_load_dword v4, v[2:3], off offset:4"])
    assert kinds(same_lane_addr, 0, 1) == ["mem"]      # lane k+1 may hit lane k's +4
    uniform = dependency_dag(["s_store_dword s1, s[4:5], 0x0",
                              "s_load_dword s2, s[4:5], 0x4"])
    assert not kinds(uniform, 0, 1)


@pytest.mark.parametrize("i", range(3))
def test_dag_corpus_original_order_is_valid(i):
    name, co, prog, f = [x for x in corpus_functions() if "matmul_fp16" in x[0]][0]
    blocks = f.blocks()
    b = max(blocks, key=lambda b: b.end - b.start)
    window = f.instructions[b.start:b.end][i * 10:]
    dag = dependency_dag(window)
    assert dag.respects(list(range(len(window))))
