"""``mfma_schedule``: list scheduling with the matrix pipe's occupancy as a resource."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from asmevo.edits import Edit
from asmevo.timing.model import model_launch
from asmevo.launch.spec import ArgSpec, LaunchSpec
from asmevo.operator import Rejected, get_operator
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.operators.rules.mfma import pipe_schedule
from tests.operators.rules.flowkit import Individual, context, corpus_context, program, \
    same_results
from tests.operators.rules.loop_helpers import verdict

PROD = Path(__file__).resolve().parents[3] / "experiments" / "production"

# four independent 32x32x8 MFMAs (16 passes: 64 cycles of the matrix pipe each), then
# eight independent transcendental VALU ops (16 cycles of the VALU pipe each) a compiler
# left behind them: in order, the wave waits for the matrix pipe before each MFMA and
# the VALU pipe idles
BODY = "\n".join(
    ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "v_lshlrev_b32_e32 v1, 2, v0",
     "v_cvt_f32_u32_e32 v2, v0", "v_mov_b32_e32 v3, v2"]
    + [f"v_mfma_f32_32x32x8_f16 v[{16 + 16 * k}:{31 + 16 * k}], v[2:3], v[2:3], 0"
       for k in range(4)]
    + [f"v_exp_f32_e32 v{4 + k}, v{2 + k % 2}" for k in range(8)]
    + ["v_add_f32_e32 v4, v4, v5", "v_add_f32_e32 v6, v6, v7", "v_add_f32_e32 v8, v8, v9",
       "v_add_f32_e32 v10, v10, v11", "v_add_f32_e32 v4, v4, v6", "v_add_f32_e32 v8, v8, v10",
       "v_add_f32_e32 v4, v4, v8", "v_add_f32_e32 v4, v4, v16", "v_add_f32_e32 v4, v4, v32",
       "v_add_f32_e32 v4, v4, v48", "v_add_f32_e32 v4, v4, v64", "s_nop 7",
       "s_waitcnt lgkmcnt(0)", "global_store_dword v1, v4, s[4:5]"])


def cycles(prog) -> int:
    spec = LaunchSpec(name="t", kernel="k", code_object=None, grid=(1, 1, 1),
                      block=(64, 1, 1), args=(ArgSpec(name="y", kind="buffer",
                                                      dtype="float32", count=64,
                                                      output=True),))
    return model_launch(build_program(prog), spec, {"y": np.zeros(64, np.float32)}).cycles


def test_valu_work_fills_the_matrix_pipe_and_the_model_agrees():
    prog = program(BODY, buffers=1, nv=96)
    ctx = context(prog)
    edit = get_operator("mfma_schedule").mutate(Individual(), ctx)
    assert isinstance(edit, Edit), ctx.reasons
    kinds = ["M" if effects(t).mfma else "V" for t in edit.lines if t.startswith("v_")]
    first, last = kinds.index("M"), len(kinds) - 1 - kinds[::-1].index("M")
    assert "MM" not in "".join(kinds[first:last + 1])      # every MFMA gap holds VALU work
    new = apply_edits(prog, [edit])
    assert cycles(new) < cycles(prog)
    same_results(prog, [edit], {"y": np.zeros(64, np.float32)})


def test_dependences_and_program_order_among_equals_are_kept():
    texts = ["v_mfma_f32_32x32x8_f16 v[16:31], v[2:3], v[2:3], 0",
             "v_mfma_f32_32x32x8_f16 v[16:31], v[2:3], v[2:3], v[16:31]",
             "ds_read_b32 v40, v1", "ds_read_b32 v41, v1 offset:4",
             "v_add_f32_e32 v42, v40, v41"]
    order = pipe_schedule(texts, random.Random(0), "gfx942")
    assert order.index(0) < order.index(1)
    assert order.index(2) < order.index(3) < order.index(4)


def test_blocks_without_mfma_are_left_to_schedule():
    prog = program("v_add_f32_e32 v1, v0, v0\n v_add_f32_e32 v2, v1, v0\n"
                   "v_add_f32_e32 v3, v2, v0\n v_add_f32_e32 v4, v3, v0", buffers=1)
    ctx = context(prog)
    assert isinstance(get_operator("mfma_schedule").mutate(Individual(), ctx), Rejected)
    assert "holds 4 MFMAs" in ctx.reasons[0]


def test_flaggems_mm_block_verifies():
    ctx = corpus_context(PROD, "flaggems_mm", seed=1)
    edit = get_operator("mfma_schedule").mutate(Individual(), ctx)
    assert isinstance(edit, Edit), ctx.reasons
    v = verdict(PROD / "flaggems_mm", [edit])
    assert v.equal, v.reason
