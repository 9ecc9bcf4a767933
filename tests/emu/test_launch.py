"""Dispatch as the hardware does it: initial SGPRs/VGPRs, dispatch packet, kernargs,
batches and workgroup grids; the public API and the profile."""
import argparse


from asmevo.emu import Emulator, LaunchResult, run_launch
from asmevo.emu import command
from asmevo.targets.amdgpu.codeobject import load
from asmevo.targets.amdgpu.recover import recover
from asmevo.launch.spec import ArgSpec, LaunchSpec
from tests.emu.asmdsl import build_kernel

# Every work-item stores 4 dwords: [s_dispatch-derived, wg id x, wg id y, v0 as received]
STORE4 = """
    v_mov_b32_e32 v20, v0
    v_and_b32_e32 v21, 0x3ff, v0
    v_bfe_u32 v22, v0, 10, 10
    s_mul_i32 s20, s{wgy}, s{gx}
    s_add_u32 s20, s20, s{wgx}
    s_mul_i32 s20, s20, {bsz}
    v_mad_u32_u24 v23, v22, {bx}, v21
    v_add_u32_e32 v23, s20, v23
    v_lshlrev_b32_e32 v24, 4, v23
    v_mov_b32_e32 v25, 0
    v_lshl_add_u64 v[26:27], s[{buf}:{buf1}], 0, v[24:25]
    v_mov_b32_e32 v10, s{extra}
    v_mov_b32_e32 v11, s{wgx}
    v_mov_b32_e32 v12, s{wgy}
    v_mov_b32_e32 v13, v20
    global_store_dwordx4 v[26:27], v[10:13], off
"""


def spec_for(n, grid, block, kernel="k"):
    return LaunchSpec(name="t", kernel=kernel, code_object=None, grid=grid, block=block,
                      args=(ArgSpec(name="out", kind="buffer", dtype="uint32", count=n),))


def test_dispatch_ptr_packet_wg_ids_and_packed_tids():
    # user SGPRs: dispatch ptr s[0:1], kernarg ptr s[2:3]; wg x = s4, wg y = s5
    body = """
    s_load_dword s30, s[0:1], 0x4
    s_load_dwordx2 s[32:33], s[2:3], 0x0
    s_waitcnt lgkmcnt(0)
""" + STORE4.format(wgx=4, wgy=5, gx=31, bsz=32, bx=8, buf=32, buf1=33, extra=30)
    body = body.replace("s_mul_i32 s20, s5, s31", "s_mov_b32 s31, 3\n    s_mul_i32 s20, s5, s31")
    co = load(build_kernel(body, buffers=1, vid=1, user_sgprs=4,
                           directives="    .amdhsa_user_sgpr_dispatch_ptr 1\n"
                                      "    .amdhsa_system_sgpr_workgroup_id_y 1"))
    grid, block = (3, 2, 1), (8, 4, 1)
    n = 3 * 2 * 32 * 4
    res = run_launch(co, spec_for(n, grid, block), {})
    assert res.status == "ok", res.message
    out = res.outputs["out"].reshape(-1, 4)
    # dispatch packet dword 1 = workgroup_size_x | workgroup_size_y << 16
    assert (out[:, 0] == (8 | 4 << 16)).all()
    for g in range(6):
        gx, gy = g % 3, g // 3
        for t in range(32):
            row = out[g * 32 + t]
            assert row[1] == gx and row[2] == gy
            assert row[3] == (t % 8) | ((t // 8) << 10)
    assert res.waves == 6


def test_kernarg_preload_sgprs():
    body = """
    v_mov_b32_e32 v2, 0
    v_mov_b32_e32 v4, s2
    v_mov_b32_e32 v5, s3
    global_store_dwordx2 v2, v[4:5], s[2:3]
"""
    co = load(build_kernel(body, buffers=1, user_sgprs=4,
                           directives="    .amdhsa_user_sgpr_kernarg_preload_length 2"))
    res = run_launch(co, spec_for(4, (1, 1, 1), (64, 1, 1)), {})
    assert res.status == "ok", res.message
    addr = int(res.outputs["out"][0]) | int(res.outputs["out"][1]) << 32
    assert addr != 0 and addr % 256 == 0


def test_program_input_profile_and_batches(monkeypatch):
    from asmevo.emu.run import launch as launch_mod
    body = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_lshl_b32 s6, s2, 6
    v_add_u32_e32 v1, s6, v0
    v_cmp_gt_u32_e32 vcc, 100, v1
    s_and_saveexec_b64 s[8:9], vcc
    s_cbranch_execz DONE
    v_lshlrev_b32_e32 v2, 2, v1
    global_store_dword v2, v1, s[4:5]
DONE:
    s_or_b64 exec, exec, s[8:9]
"""
    co = load(build_kernel(body, buffers=1))
    prog = recover(co, verify=False)
    monkeypatch.setattr(launch_mod, "BATCH_LANES", 64)      # one workgroup per batch
    emu = Emulator(prog)
    res = emu.launch(spec_for(128, (2, 1, 1), (64, 1, 1)), {})
    assert isinstance(res, LaunchResult) and res.ok
    assert list(res.outputs["out"][:100]) == list(range(100))
    assert not res.outputs["out"][100:].any()
    prof = res.profile["k"]
    assert prof.counts[0] == 2
    store = [i for i, ins in enumerate(prog.function("k").instructions)
             if ins.mnemonic.startswith("global_store")][0]
    assert prof.counts[store] == 2 and prof.lanes[store] == 100
    assert res.lane_instructions == int(prof.lanes.sum())


def test_command_writes_npy(tmp_path, capsys):
    from pathlib import Path
    spec = Path(__file__).resolve().parents[2] / "experiments" / "kernels" / "vector_add"
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    command.add_parser(sub)
    args = ap.parse_args(["emulate", str(spec), "--out", str(tmp_path), "--check"])
    assert args.func(args) == 0
    assert (tmp_path / "c.npy").exists()
    assert "wave-instructions" in capsys.readouterr().out


def test_callee_agprs_sit_at_the_launching_kernels_accum_offset():
    # ACCUM_OFFSET belongs to the wave: a0 in a called function is v[accum_offset], not v0
    # (emufuzz: -O0 HIP callees spill to AGPRs; decoding them at offset 0 clobbered v0..)
    body = """
    s_load_dwordx2 s[8:9], s[0:1], 0x0
    s_getpc_b64 s[4:5]
    s_add_u32 s4, s4, f@rel32@lo+4
    s_addc_u32 s5, s5, f@rel32@hi+12
    v_mov_b32_e32 v0, 7
    v_mov_b32_e32 v1, 5
    s_swappc_b64 s[30:31], s[4:5]
    v_mov_b32_e32 v10, 0
    s_waitcnt lgkmcnt(0)
    global_store_dword v10, v0, s[8:9]
    global_store_dword v10, v3, s[8:9] offset:4
    s_endpgm
.p2align 8
.type f,@function
f:
    v_accvgpr_write_b32 a0, v1
    v_accvgpr_read_b32 v3, a0
    s_setpc_b64 s[30:31]
.Lf_end:
.size f, .Lf_end - f
"""
    co = load(build_kernel(body, buffers=1, acc=8, nv=16))
    res = run_launch(co, spec_for(2, (1, 1, 1), (64, 1, 1)), {})
    assert res.status == "ok", res.message
    assert list(res.outputs["out"]) == [7, 5]
