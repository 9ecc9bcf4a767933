"""Hostile kernels end with the right verdict, quickly, and leave the process healthy."""
import time

import numpy as np
import pytest

from asmevo.emu import MemoryFault, run_launch
from asmevo.targets.amdgpu.codeobject import load
from asmevo.launch.spec import ArgSpec, LaunchSpec
from tests.emu.asmdsl import build_kernel

PROLOGUE = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32_e32 v2, 2, v0
    v_mov_b32_e32 v3, 0
    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]
"""


def launch(body, n=64, **kw):
    co = load(build_kernel(PROLOGUE + body, buffers=1))
    spec = LaunchSpec(name="h", kernel="k", code_object=None, grid=(1, 1, 1), block=(64, 1, 1),
                      args=(ArgSpec(name="buf", kind="buffer", dtype="uint32", count=n),))
    t0 = time.process_time()      # CPU time: a busy machine does not fail the test
    res = run_launch(co, spec, {"buf": np.arange(n, dtype=np.uint32)}, **kw)
    assert time.process_time() - t0 < 1.0
    return res


def test_clean_kernel_is_ok():
    res = launch("global_store_dword v[4:5], v0, off")
    assert res.status == "ok" and list(res.outputs["buf"]) == list(range(64))


def test_write_past_buffer_faults_with_addresses():
    res = launch("global_store_dword v[4:5], v0, off offset:256")
    assert res.status == "fault"
    assert "out-of-bounds" in res.message and "kernel k" in res.message
    assert res.address is not None and res.byte_address is not None
    assert "past the end of buf" in res.message
    assert list(res.outputs["buf"]) == list(range(64))        # nothing was written
    with pytest.raises(MemoryFault):
        res.raise_for_status()


def test_guard_bytes_catch_small_overruns_without_fault():
    res = launch("global_store_dword v[4:5], v0, off offset:4", guard_bytes=256, guard_fill=0xAB)
    assert res.status == "ok"
    before, after = res.guards["buf"]
    assert before == b"\xab" * 256
    assert after[:4] == (63).to_bytes(4, "little") and after[4:] == b"\xab" * 252


def test_fill_poisons_outputs():
    res = launch("s_nop 0", fill={"buf": 0xFF})
    assert (res.outputs["buf"] == 0xFFFFFFFF).all()


def test_read_unmapped_memory_faults():
    res = launch("v_mov_b32_e32 v5, 0x1000\nv_mov_b32_e32 v4, 0\nglobal_load_dword v6, v[4:5], off")
    assert res.status == "fault" and "unmapped" in res.message


def test_null_pointer_and_misaligned():
    res = launch("v_mov_b32_e32 v4, 0\nv_mov_b32_e32 v5, 0\nglobal_load_dword v6, v[4:5], off")
    assert res.status == "fault"
    res = launch("global_load_dword v6, v[4:5], off offset:2")
    assert res.status == "fault" and "misaligned" in res.message


def test_lds_out_of_bounds_faults():
    res = launch("v_mov_b32_e32 v6, 0x10000\nds_write_b32 v6, v0")
    assert res.status == "fault" and "LDS" in res.message


def test_infinite_loop_times_out():
    res = launch("LOOP:\n    s_add_u32 s10, s10, 1\n    s_branch LOOP", max_instructions=50_000)
    assert res.status == "timeout" and "budget" in res.message


def test_infinite_loop_with_default_budget_and_time_limit():
    res = launch("LOOP:\n    s_branch LOOP", time_limit=0.3)
    assert res.status == "timeout"


def test_setpc_to_garbage_faults():
    res = launch("s_getpc_b64 s[10:11]\ns_add_u32 s10, s10, 2\ns_setpc_b64 s[10:11]")
    assert res.status == "fault" and "not the start of an instruction" in res.message
    res = launch("s_mov_b64 s[10:11], 0x1234\ns_setpc_b64 s[10:11]")
    assert res.status == "fault"


def test_setpc_to_instruction_works():
    res = launch("s_getpc_b64 s[10:11]\ns_add_u32 s10, s10, 12\ns_setpc_b64 s[10:11]\n"
                 "s_endpgm\nglobal_store_dword v[4:5], v0, off")
    assert res.status == "ok", res.message


def test_unsupported_instruction_is_a_verdict_not_a_noop():
    res = launch("v_sad_u8 v6, v0, v1, v2")
    assert res.status == "unsupported" and "v_sad_u8" in res.message


def test_store_to_kernarg_segment_faults():
    res = launch("s_store_dword s4, s[0:1], 0x0")
    assert res.status == "fault" and "read-only" in res.message


def test_process_still_healthy():
    res = launch("global_store_dword v[4:5], v0, off")
    assert res.ok
