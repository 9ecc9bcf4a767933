"""``trim_registers``: descriptor trimming and renaming down inside one block."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.operator import OperatorContext, Rejected, get_operator
from asmevo.operators.rules.occupancy import Refuse, rename_block, trim_edit
from asmevo.operators.rules.registers import needed_granules, next_threshold
from tests.operators.rules.helpers import Individual, kernel
from tests.targets.amdgpu.analysis.helpers import make_fn


def with_descriptor(name: str, **fields):
    kname, program = kernel(name)
    fn = program.function(kname)
    kd = replace(fn.kernel.descriptor, **fields)
    return kname, program.with_function(replace(fn, kernel=replace(fn.kernel, descriptor=kd)))


def test_over_allocated_descriptor_is_trimmed_with_an_empty_window():
    # vector_add needs granules (0, 1); ask for (5, 4) and the operator gives them back
    kname, program = with_descriptor("vector_add", granulated_workitem_vgpr_count=5,
                                     granulated_wavefront_sgpr_count=4)
    fn = program.function(kname)
    assert needed_granules(fn, program) == (0, 1)
    edit = trim_edit(fn, program, "trim_registers")
    assert (edit.start, edit.end, edit.lines) == (0, 0, ())
    assert dict(edit.descriptor) == {"granulated_workitem_vgpr_count": 0,
                                     "granulated_wavefront_sgpr_count": 1}
    out = apply_edit(program, edit).function(kname)
    assert out.kernel.descriptor.granulated_workitem_vgpr_count == 0
    assert out.instructions == fn.instructions


def test_sgpr_need_counts_launch_registers_and_all_extras():
    kname, program = kernel("vector_add")
    fn = program.function(kname)
    kd = fn.kernel.descriptor
    used = fn.register_usage().sgprs            # 8: s0..s7
    launch = kd.user_sgpr_count + kd.enable_sgpr_workgroup_id_x
    need = max(used, launch) + 6
    assert needed_granules(fn, program)[1] == -(-need // 8) - 1


def test_exact_descriptor_is_left_alone():
    kname, program = kernel("vector_add")
    fn = program.function(kname)
    assert trim_edit(fn, program, "trim_registers") == \
        Rejected("the descriptor already asks for no more than the code needs")
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(0),
                          program_of=lambda ind: program)
    assert isinstance(get_operator("trim_registers").mutate(Individual(), ctx), Rejected)
    assert "occupancy is not VGPR-limited" in ctx.reasons[0]


def test_threshold_of_a_vgpr_limited_kernel():
    kname, program = kernel("tri_matmul_bf16")     # 66 VGPRs -> 72 allocated -> 7 waves
    assert next_threshold(program.function(kname), program) == 64


def test_accum_offset_no_longer_floors_renaming_down():
    """tri_matmul_bf16 (66 VGPRs, accum_offset 68) is one rename away from 8 waves;
    accum_offset is lowered with the VGPRs, so the operator tries the renaming and
    says why it fails (no free register in the block), not that the offset blocks it."""
    kname, program = kernel("tri_matmul_bf16")
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(0),
                          program_of=lambda ind: program)
    assert isinstance(get_operator("trim_registers").mutate(Individual(), ctx), Rejected)
    assert "no free v[?:1] below v64" in ctx.reasons[0]
    assert "accum_offset" not in ctx.reasons[0]


def test_trim_lowers_accum_offset_with_the_vgprs_and_stays_equal(tmp_path):
    """gfx942: a K0 whose descriptor asks for 64 VGPRs with AGPRs from 64 on, whose
    code uses 8: the trim lowers both (accum_offset 64 -> 8), the rebuilt object
    passes the ABI gate (accum_offset may differ) and is bit-equal to that K0."""
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.verify.evaluate import EvalContext, evaluate_candidate
    from tests.conftest import KERNELS

    kname, program = with_descriptor("vector_add", granulated_workitem_vgpr_count=7,
                                     accum_offset_field=15)
    fn = program.function(kname)
    assert fn.kernel.descriptor.accum_offset == 64
    edit = trim_edit(fn, program, "trim_registers")
    assert dict(edit.descriptor) == {"accum_offset_field": 1,
                                     "granulated_workitem_vgpr_count": 0}
    assert "accum_offset 64 -> 8" in edit.note
    fat = program.with_function(replace(fn, edited=True))
    k0 = tmp_path / "fat.co"
    k0.write_bytes(build_program(fat))
    ctx = EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", code_object=str(k0),
                      seeds=(0,), runs=1, timing="none", isolate=False)
    from asmevo.targets.amdgpu import load, recover
    k0_fn = recover(load(k0)).function(kname)
    assert k0_fn.kernel.descriptor.accum_offset == 64
    trim = trim_edit(k0_fn, recover(load(k0)), "trim_registers")
    ev = evaluate_candidate(ctx, (trim,))
    assert ev.verdict.equal, ev.verdict
    from asmevo.verify.evaluate import build_candidate
    kd = load(build_candidate(ctx, (trim,))[0]).kernel(kname).descriptor
    assert (kd.accum_offset, kd.granulated_workitem_vgpr_count) == (8, 0)


BLOCK = """
    v_mov_b32_e32 v1, 0
    s_branch body
    body:
    global_load_dwordx2 v[70:71], v[2:3], off
    v_mov_b32_e32 v69, 7
    s_waitcnt vmcnt(0)
    v_add_u32_e32 v68, v70, v69
    v_add_u32_e32 v68, v68, v71
    global_store_dword v[2:3], v68, off
    s_endpgm
"""


def block_fn(src: str):
    kname, program = kernel("vector_add")
    fn = replace(program.function(kname), items=make_fn(src, kname).items, edited=True)
    program = program.with_function(fn)
    fn = program.function(kname)
    cfg = build_cfg(fn)
    return fn, cfg, Liveness(fn, cfg)


def test_block_local_registers_are_renamed_below_the_threshold_tuples_aligned():
    fn, cfg, live = block_fn(BLOCK)
    lines, mapping = rename_block(fn, live, cfg, 1, {68, 69, 70, 71}, 64)
    # the pair v[70:71] takes the lowest free even pair (v0 and v1 are dead in the
    # block), the singles the next free registers (v[2:3] hold the address)
    assert mapping == {70: 0, 71: 1, 68: 4, 69: 5}
    assert lines == [
        "global_load_dwordx2 v[0:1], v[2:3], off",
        "v_mov_b32_e32 v5, 7",
        "s_waitcnt vmcnt(0)",
        "v_add_u32_e32 v4, v0, v5",
        "v_add_u32_e32 v4, v4, v1",
        "global_store_dword v[2:3], v4, off",
        "s_endpgm"]


def test_register_live_into_the_block_is_not_renamed():
    fn, cfg, live = block_fn(BLOCK.replace("v_mov_b32_e32 v1, 0", "v_mov_b32_e32 v69, 0")
                             .replace("v_mov_b32_e32 v69, 7", "v_mov_b32_e32 v1, 7"))
    with pytest.raises(Refuse, match="across the block boundary"):
        rename_block(fn, live, cfg, 1, {68, 69, 70, 71}, 64)


def test_tuple_reaching_below_the_threshold_is_refused():
    fn, cfg, live = block_fn(BLOCK.replace("v[70:71]", "v[63:64]").replace("v70", "v63")
                             .replace("v71", "v64"))
    with pytest.raises(Refuse, match="mixes renamed and kept"):
        rename_block(fn, live, cfg, 1, {64, 68, 69}, 64)
