"""The timing model moves the right way on controlled pairs of real kernels.

Each pair is two assembled code objects (llvm-mc + ld.lld) that compute the
same thing and differ in one property the model must reward or punish.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asmevo.edits import Edit
from asmevo.timing import model as T
from asmevo.timing import cu as timing_cu
from asmevo.timing.model import instruction_record, load_params, model_launch
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.launch.spec import ArgSpec, LaunchSpec, load_spec, make_inputs

KERNELS = Path(__file__).resolve().parents[2] / "experiments" / "kernels"

_TEMPLATE = """.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5
.text
.globl k
.p2align 8
.type k,@function
k:
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_load_dwordx2 s[6:7], s[0:1], 0x8
    v_and_b32 v0, 0x3ff, v0
    v_lshlrev_b32 v2, 2, v0
    s_lshl_b32 s9, s2, 12
    v_add_u32 v2, s9, v2
    v_mov_b32 v3, 0
    s_mov_b32 s10, 0
    s_waitcnt lgkmcnt(0)
{pre}
.Lloop:
    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]
    v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]
{body}
    global_store_dword v[6:7], v8, off
    v_add_u32 v2, 0x400, v2
    s_add_u32 s10, s10, 1
    s_cmp_lt_u32 s10, 4
    s_cbranch_scc1 .Lloop
    s_waitcnt vmcnt(0)
    s_endpgm
.Lk_end:
.size k, .Lk_end - k
.rodata
.p2align 6
.amdhsa_kernel k
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_user_sgpr_count 2
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 16
    .amdhsa_next_free_vgpr {nv}
    .amdhsa_next_free_sgpr 16
    .amdhsa_accum_offset {acc}
    .amdhsa_reserve_vcc 0
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: {nv}
    .agpr_count: 0
    .max_flat_workgroup_size: 64
    .args: []
...
.end_amdgpu_metadata
"""

# the loop body reads src[i], adds 1.0 and stores dst[i]; 16 independent VALU ops
# (on v10..v13, never stored) are the work a load can hide behind
_WORK = "\n".join(f"    v_fma_f32 v{10 + i % 4}, v{10 + i % 4}, v{10 + i % 4}, 1.0"
                  for i in range(16))
_LOAD = "    global_load_dword v8, v[4:5], off"
_WAIT = "    s_waitcnt vmcnt(0)"
_USE = "    v_add_f32 v8, 1.0, v8"


def _build(body: str, *, pre: str = "", nv: int = 16) -> bytes:
    return build_asm(_TEMPLATE.format(body=body, pre=pre, nv=nv, acc=min(nv, 256) // 4 * 4),
                     TargetId("gfx942"))


def _spec(workgroups: int) -> LaunchSpec:
    n = workgroups * 1024
    return LaunchSpec(name="t", kernel="k", code_object=Path("t.co"), grid=(workgroups, 1, 1),
                      block=(64, 1, 1), args=(
                          ArgSpec("src", "buffer", "float32", n, offset=0, size=8),
                          ArgSpec("dst", "buffer", "float32", n, output=True, offset=8,
                                  size=8)))


def _cycles(code: bytes, workgroups: int = 4) -> int:
    spec = _spec(workgroups)
    return model_launch(code, spec, make_inputs(spec)).cycles


def test_hoisted_load_is_faster():
    late = _build("\n".join([_LOAD, _WAIT, _USE, _WORK]))
    early = _build("\n".join([_LOAD, _WORK, _WAIT, _USE]))
    assert _cycles(early) < _cycles(late)


def test_waitcnt_after_each_load_is_slower():
    loads = [f"    global_load_dword v{8 + j}, v[4:5], off offset:{256 * j}" for j in range(4)]
    adds = "\n".join(f"    v_add_f32 v8, v8, v{8 + j}" for j in range(1, 4))
    batched = _build("\n".join(loads + [_WAIT, adds]))
    serial = _build("\n".join(x for ld in loads for x in (ld, _WAIT)) + "\n" + adds)
    assert _cycles(serial) > _cycles(batched)


def test_extra_valu_in_loop_is_slower():
    base = _build("\n".join([_LOAD, _WAIT, _USE]))
    extra = _build("\n".join([_LOAD, _WAIT, _USE, "    v_mov_b32 v9, v8"]))
    assert _cycles(extra) > _cycles(base)


def test_snop_in_loop_is_slower():
    base = _build("\n".join([_LOAD, _WAIT, _USE]))
    nops = _build("\n".join([_LOAD, _WAIT, _USE, "    s_nop 7"]))
    assert _cycles(nops) > _cycles(base)


def test_more_vgprs_than_occupancy_allows_is_slower():
    # 32 one-wave workgroups per CU: 8 waves/SIMD fit with 16 VGPRs, 2 with 256
    body = "\n".join([_LOAD, _WAIT, _USE])
    wgs = load_params("gfx942").compute_units * 32
    lean, fat = _build(body, nv=16), _build(body, nv=256)
    spec = _spec(wgs)
    values = make_inputs(spec)
    a, b = model_launch(lean, spec, values), model_launch(fat, spec, values)
    assert (a.occupancy, b.occupancy) == (8, 2)
    assert b.cycles > a.cycles


def test_bytes_moved_matter():
    """The same kernel over more data per CU takes longer (bandwidth-bound regime)."""
    code = _build("\n".join([_LOAD, _WAIT, _USE]))
    ncu = load_params("gfx942").compute_units
    assert _cycles(code, ncu * 16) > _cycles(code, ncu * 4)


def test_mfma_and_nop_costs():
    p = load_params("gfx942")
    assert instruction_record("s_nop 7", p).cost == 8
    r = instruction_record("v_mfma_f32_32x32x8_f16 v[0:15], v[16:17], v[18:19], v[0:15]", p)
    assert r.unit == 8 * 4            # 8 passes on CDNA3 (LLVM gfx940 model), 4 cycles each
    r90 = instruction_record("v_mfma_f32_32x32x8_f16 v[0:15], v[16:17], v[18:19], v[0:15]",
                             load_params("gfx90a"))
    assert r90.unit == 16 * 4
    assert instruction_record("v_exp_f32_e32 v1, v2", p).unit == 16
    assert instruction_record("v_add_f32_e32 v1, v2, v3", p).unit == 4


def test_waitcnt_semantics():
    w = timing_cu._Wave([], None, None, 0)
    w.lds.extend([100, 200])
    w.smem.extend([500, 50])
    assert timing_cu._lgkm_target(w, 0, 0) == 500
    assert timing_cu._lgkm_target(w, 1, 0) == 200       # three of four done (smem out of order)
    assert timing_cu._lgkm_target(w, 4, 0) == 0


def _corpus(name: str):
    spec = load_spec(KERNELS / name, "small")
    return spec, make_inputs(spec), spec.code_object.read_bytes()


def test_deterministic_and_cached():
    spec, values, code = _corpus("softmax")
    a = model_launch(code, spec, values)
    T._CACHE.clear()
    b = model_launch(code, spec, values)
    assert a is not b and a.cycles == b.cycles
    assert np.array_equal(a.stalls["softmax"], b.stalls["softmax"])
    assert model_launch(code, spec, values) is b
    assert a.label == "modeled" and a.seconds == pytest.approx(a.cycles / load_params("gfx942").clock_hz)


def _edited(code: bytes, kernel: str, edits) -> bytes:
    return build_program(apply_edits(recover(load(code)), edits))


def test_corpus_edits_move_the_model():
    spec, values, code = _corpus("asm_copy")
    fn = recover(load(code)).function("asm_copy")
    texts = [i.text for i in fn.instructions]
    loop_add = next(i for i, t in enumerate(texts) if t.startswith("s_add_u32 s9"))
    base = model_launch(code, spec, values).cycles
    nop = _edited(code, "asm_copy", [Edit("asm_copy", loop_add, loop_add,
                                          ("s_nop 7",))])
    valu = _edited(code, "asm_copy", [Edit("asm_copy", loop_add, loop_add,
                                           ("v_mov_b32 v9, v8",))])
    assert model_launch(nop, spec, values).cycles > base
    assert model_launch(valu, spec, values).cycles > base


def test_gfx90a_object():
    spec = load_spec(KERNELS / "softmax", "small")
    values = make_inputs(spec)
    res = model_launch(spec.code_object_for("gfx90a").read_bytes(), spec, values)
    assert res.target == "gfx90a" and res.cycles > 0


def test_single_wave_workgroups_are_not_barrier_capped():
    """LLVM getMaxWorkGroupsPerCU: the 16-workgroup (barrier) cap applies only to groups of
    more than one wave; 32 one-wave groups at 8 waves per SIMD are all resident at once."""
    p = load_params("gfx942")
    recs = [instruction_record("s_sleep 100", p), instruction_record("s_endpgm", p)]
    sleep = 100 * p.issue["sleep_cycles_per_count"]
    def mem():
        return T._cu_memory(p, 1, 0.0, 1)

    one = T.simulate_cu(recs, [0, 1], [64.0, 64.0], [[(0, [0, 1])]] * 32, p, 8, mem(), 2)
    assert one.cycles < 1.5 * sleep                 # one round, not two
    two = T.simulate_cu(recs, [0, 1], [64.0, 64.0], [[(0, [0, 1])] * 2] * 32, p, 8, mem(), 2)
    assert two.cycles > 1.9 * sleep                 # 2-wave groups: 16 resident, two rounds


def test_out_of_range_buffer_lanes_move_no_bytes():
    """Triton masks tails with the buffer range check: lanes past num_records neither read
    nor write memory (CDNA3 ISA, buffer range checking), so they are not bytes moved."""
    spec, values, code = _corpus("tri_quant_int8")     # BLOCK 4096, 500 valid columns
    m = model_launch(code, spec, values)
    footprint = sum(a.nbytes for a in spec.buffers)
    assert m.vmem_bytes <= 1.01 * footprint


def test_a_sampled_launch_that_faults_is_a_timing_error():
    # more workgroups than CUs: only CU 0's workgroups run (the sampled path); a load from
    # address 0 faults there, and timing says why instead of failing inside itself
    from asmevo.timing.model import TimingError
    code = _build("    v_mov_b32 v4, 0\n    v_mov_b32 v5, 0\n" + _LOAD + "\n" + _WAIT)
    spec = _spec(load_params("gfx942").compute_units + 1)
    with pytest.raises(TimingError, match=r"does not run to completion \(fault"):
        model_launch(code, spec, make_inputs(spec))
