"""``trim_lds``: the declared LDS lowered to what every access provably stays within."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import struct

import numpy as np
import pytest

from asmevo.edits import Edit
from asmevo.timing.model import model_launch
from asmevo.operator import Rejected, get_operator
from asmevo.targets.amdgpu import load
from asmevo.targets.amdgpu.abi import abi_diff
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edit, apply_edits
from asmevo.verify.evaluate import EvalContext, k0_state, timing_state
from asmevo.operators.rules.lds import lds_need, trim_lds_edit
from tests.operators.rules.flowkit import Individual, context, corpus_context, program, run
from tests.operators.rules.loop_helpers import verdict

ROOT = Path(__file__).resolve().parents[3] / "experiments"
PROD = ROOT / "production"
DQ = "aiter_bwd_hd128_dq_convert_fp16"


def propose(root, name):
    ctx = corpus_context(root, name)
    return get_operator("trim_lds").mutate(Individual(), ctx), ctx


def test_aiter_fmha_bwd_kernels_declare_40k_and_touch_a_few():
    """AITer's fmha backward pre/post-processing objects (production hd128, corpus hd64)
    declare 40 KiB of LDS; their accesses are bounded by the wave id and lane."""
    for root, name, need in ((PROD, DQ, 3584), (PROD, "aiter_bwd_hd128_odo_fp16", 1024),
                             (ROOT / "kernels", "aiter_bwd_odo", 1024),
                             (ROOT / "kernels", "aiter_bwd_dq_convert", 3584)):
        edit, _ = propose(root, name)
        assert isinstance(edit, Edit), (name, edit)
        assert (edit.start, edit.end, edit.lines) == (0, 0, ())
        assert dict(edit.descriptor) == {"group_segment_fixed_size": need}


def test_trimmed_object_declares_the_size_in_descriptor_and_metadata_and_is_equal():
    edit, ctx = propose(PROD, DQ)
    out = apply_edit(ctx.k0, edit)
    co = load(build_program(out))
    k = co.kernel(ctx.kernel)
    assert k.descriptor.group_segment_fixed_size == 3584
    assert k.meta.group_segment_fixed_size == 3584
    assert abi_diff(ctx.k0.source, co) == []
    v = verdict(PROD / DQ, [edit])
    assert v.equal, v.reason


def test_abi_check_wants_the_metadata_to_follow_the_descriptor():
    """The LDS size may change with an edit, but the metadata the runtime reads must say
    what the descriptor says: K0 with only its descriptor's size patched is refused."""
    _, ctx = propose(PROD, DQ)
    co = ctx.k0.source
    k = co.kernel(ctx.kernel)
    ro = next(s for s in co.sections.values() if s.addr <= k.kd_address < s.addr + s.size)
    data = bytearray(co.data)
    struct.pack_into("<I", data, ro.offset + (k.kd_address - ro.addr), 3584)
    diffs = abi_diff(co, load(bytes(data)))
    assert [d.field for d in diffs] == ["metadata.group_segment_fixed_size"]


def test_more_workgroups_per_cu_is_modeled_faster_at_large():
    """4096 workgroups at large: 14 per CU, one at a time with 40 KiB; the trimmed LDS
    (with the registers trimmed too) lets eight waves per SIMD run."""
    edit, ctx = propose(PROD, DQ)
    regs = get_operator("trim_registers").mutate(Individual([edit]), ctx)
    assert isinstance(regs, Edit), regs
    tctx = EvalContext(spec_path=str(PROD / DQ), size="small", timing_size="large")
    st, ts = k0_state(tctx), timing_state(tctx)
    k0 = model_launch(st.k0_bytes, ts.spec, ts.values)
    new = model_launch(build_program(apply_edits(ctx.k0, (edit, regs))), ts.spec, ts.values)
    assert (k0.occupancy, new.occupancy) == (1, 8)
    assert k0.cycles / new.cycles > 1.3


LDS_BODY = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_and_b32_e32 v1, 0x3ff, v0
  v_lshrrev_b32_e32 v2, 6, v1
  v_lshlrev_b32_e32 v1, 2, v1
  v_readfirstlane_b32 s6, v2
  s_lshl_b32 s6, s6, 8
  v_add_u32_e32 v3, s6, v1
  v_mov_b32_e32 v4, v0
  ds_write_b32 v3, v4 offset:{off}
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_xor_b32_e32 v5, 4, v3
  ds_read_b32 v6, v5 offset:{off}
  s_waitcnt lgkmcnt(0)
  v_mov_b32_e32 v7, 0
  global_store_dword v1, v6, s[4:5]
"""


def test_hand_written_exchange_is_trimmed_to_its_bound_and_runs_the_same():
    """Lanes write their id at 4*tid + 256*wave + off and read their neighbour's (the
    address xor 4): with the 1024-work-item limit of the metadata the write ends below
    15 * 256 + 4 * 1023 + off + 4 and the read (xor: any value below the next power of
    two) below 8191 + off + 4; K0 and the trimmed kernel store the same bits."""
    prog = program(LDS_BODY.format(off=0x100), buffers=1, lds=60000)
    fn = prog.function("k")
    need = lds_need(fn, prog)
    assert need == 8191 + 0x100 + 4
    edit = trim_lds_edit(fn, prog, "trim_lds")
    assert dict(edit.descriptor) == {"group_segment_fixed_size": 8704}
    new = apply_edit(prog, edit)
    y = np.zeros(256, np.uint32)
    a = run(prog, {"y": y}, block=256)
    b = run(new, {"y": y}, block=256)
    assert a["y"].tobytes() == b["y"].tobytes()
    assert a["y"][1] == 0 and a["y"][0] == 1        # the neighbour's id came back


def test_a_size_below_the_bound_faults_on_the_emulator():
    """The bound is what keeps it exact: below the highest access a full workgroup makes
    (15 * 256 + 4 * 1023 + off + 4 = 8192) the emulator faults."""
    prog = program(LDS_BODY.format(off=0x100), buffers=1, lds=60000)
    fn = prog.function("k")
    short = Edit("k", 0, 0, (), descriptor=(("group_segment_fixed_size", 7680),))
    with pytest.raises(AssertionError, match="out-of-bounds"):
        run(apply_edit(prog, short), {"y": np.zeros(1024, np.uint32)}, block=1024)
    assert lds_need(fn, prog) > 8192


@pytest.mark.parametrize("body, reason", [
    ("s_load_dword s4, s[0:1], 0x0\n s_waitcnt lgkmcnt(0)\n v_mov_b32_e32 v1, s4\n"
     " ds_write_b32 v1, v0", "is not bounded"),
    ("v_mov_b32_e32 v2, 0\n v_mov_b32_e32 v3, 0\n flat_load_dword v4, v[2:3]\n"
     " s_waitcnt vmcnt(0) lgkmcnt(0)", "FLAT access"),
    ("s_getreg_b32 s4, hwreg(HW_REG_LDS_ALLOC, 0, 32)", "reads the LDS allocation"),
    ("s_mov_b32 m0, 0\n ds_append v1", "through M0"),
    ("v_mov_b32_e32 v1, 0x7e00\n ds_write_b32 v1, v0 offset:0x100", "may touch 32516"),
    ("v_mov_b32_e32 v1, 0\n v_mov_b32_e32 v255, 0\n ds_write_b32 v1, v255",
     "would not run more waves"),
])
def test_refusals_say_why(body, reason):
    nv = 256 if "v255" in body else 32
    prog = program(body, buffers=1, lds=32768, nv=nv)
    ctx = context(prog)
    assert isinstance(get_operator("trim_lds").mutate(Individual(), ctx), Rejected)
    assert reason in ctx.reasons[0], ctx.reasons[0]


@pytest.mark.parametrize("root, name, reason", [
    (ROOT / "kernels", "aiter_fmoe_stage1", "LDS DMA"),
    (ROOT / "kernels", "softmax", "is not bounded"),
    (PROD, "liger_softmax", "declares no static LDS"),
])
def test_corpus_refusals(root, name, reason):
    result, ctx = propose(root, name)
    assert isinstance(result, Rejected)
    assert reason in ctx.reasons[0], ctx.reasons[0]


def test_unchanged_when_the_code_needs_all_of_it():
    prog = program("v_mov_b32_e32 v1, 0x7ffc\n ds_write_b32 v1, v0", buffers=1, lds=32768)
    fn = prog.function("k")
    assert lds_need(fn, prog) == 32768
    kd = fn.kernel.descriptor
    assert isinstance(trim_lds_edit(replace(fn, kernel=replace(
        fn.kernel, descriptor=replace(kd, group_segment_fixed_size=32768))), prog, "t"),
        Rejected)
