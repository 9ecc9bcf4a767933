"""Profiles (modeled and from rocprofv3 CSV) and hot windows on real code objects."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import numpy as np

from asmevo.profile.model import FunctionCosts, Profile, ProfileError
from asmevo.profile.modeled import profile_launch
from asmevo.profile.rocprof import read_pc_sampling_csv, read_thread_trace_csv
from asmevo.profile.windows import HotWindow, hot_windows, render_windows
from asmevo.profile_command import add_parser
from asmevo.targets.amdgpu import Label, load, recover
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.liveness import LIVE_AT_EXIT, Liveness
from asmevo.targets.amdgpu.program import Program
from tests.targets.amdgpu.analysis.helpers import make_fn
from asmevo.launch.spec import load_spec, make_inputs

KERNELS = Path(__file__).resolve().parents[1] / "experiments" / "kernels"


@pytest.fixture(scope="module")
def matmul():
    spec = load_spec(KERNELS / "matmul_tiled", "small")
    code = spec.code_object.read_bytes()
    program = recover(load(code))
    return spec, program, profile_launch(code, spec, make_inputs(spec))


def test_modeled_profile_shape(matmul):
    spec, program, prof = matmul
    fc = prof.functions[spec.kernel]
    n = len(program.function(spec.kernel).instructions)
    assert prof.source == "modeled" and prof.label == "modeled cycles"
    assert fc.executions.shape == fc.lanes.shape == fc.cycles.shape == fc.stalls.shape == (n,)
    assert (fc.stalls <= fc.cycles).all() and fc.stalls.sum() > 0
    assert fc.executions[0] == 64            # 16 workgroups x 4 waves run the entry


def test_hot_windows_lie_inside_blocks(matmul):
    spec, program, prof = matmul
    ws = hot_windows(program, prof, top=8, max_len=16)
    assert ws and all(isinstance(w, HotWindow) for w in ws)
    assert [w.cycles for w in ws] == sorted((w.cycles for w in ws), reverse=True)
    fn = program.function(spec.kernel)
    blocks = fn.blocks()
    # instruction index of every label: a window may start at one, never contain one inside
    label_at, idx = set(), 0
    for item in fn.items:
        if isinstance(item, Label):
            label_at.add(idx)
        else:
            idx += 1
    for w in ws:
        assert 1 <= w.size <= 16
        assert any(b.start <= w.start and w.end <= b.end for b in blocks)
        assert not any(w.start < i < w.end for i in label_at)
        assert not fn.instructions[w.end - 1].is_branch       # control flow stays outside
        assert "% of modeled cycles" in w.reason
    top = ws[0]
    assert top.loop and "loop body" in top.reason and "s_waitcnt" in top.reason
    assert 0 < sum(w.share for w in ws) <= 1.0 + 1e-9


def test_window_live_sets_are_the_operators(matmul):
    """A window's live sets are what an operator's Liveness says at its edges."""
    spec, program, prof = matmul
    fn = program.function(spec.kernel)
    live = Liveness(fn)
    assert live.before(0) & (1 << R.VGPR_BASE)                    # v0 (work-item id) live in
    end = next(i for i, x in enumerate(fn.instructions) if x.mnemonic == "s_endpgm")
    assert live.after(end) == 0                                    # nothing after s_endpgm
    ws = hot_windows(program, prof, top=20)
    assert len(ws) >= 5
    for w in ws:
        assert w.live_in == tuple(R.names(live.before(w.start)))
        assert w.live_out == tuple(R.names(live.after(w.end - 1)))


def _flat(program, fn_name, cycles):
    n = len(program.function(fn_name).instructions)
    c = np.array(cycles, float)
    return Profile("modeled", {fn_name: FunctionCosts(fn_name, np.ones(n, np.int64),
                                                      np.full(n, 64, np.int64), c, c * 0)},
                   float(c.sum()))


def test_leaving_the_function_keeps_everything_live():
    """Where the profile's own liveness and the operators' disagreed: control that leaves
    the function. The old profile liveness counted only successors inside the function,
    so before a branch to a label outside it (a tail call) v4 was dead -- free scratch
    for whoever read the window -- and after a return (s_setpc) nothing was live; the
    operators' liveness keeps every register live at both (the code run next is not
    in view). Now the windows show what operators assume."""
    fn = make_fn("""
        v_mov_b32_e32 v1, 1.0
        v_mov_b32_e32 v4, 0
        s_cmp_eq_u32 s0, 0
        s_cbranch_scc1 other_function
        v_mov_b32_e32 v2, 0
        v_mov_b32_e32 v3, 0
        global_store_dword v[2:3], v1, off
        s_endpgm""", name="tail")
    program = Program(None, (fn,))
    ws = hot_windows(program, _flat(program, "tail", [1] * 8), min_len=1)
    assert [(w.start, w.end) for w in ws] == [(0, 3), (4, 7)]     # branches stay outside
    out_of_function, to_endpgm = ws
    # the old profile liveness: live out exec, scc, v1, v3 (the fall-through's); live in exec, s0
    assert out_of_function.live_out == tuple(R.names(LIVE_AT_EXIT))
    written = (R.span(R.VGPR_BASE + 1, R.VGPR_BASE + 1) | R.span(R.VGPR_BASE + 4, R.VGPR_BASE + 4)
               | R.SCC_MASK)
    assert out_of_function.live_in == tuple(R.names(LIVE_AT_EXIT & ~written))
    assert to_endpgm.live_out == () and to_endpgm.live_in == ("exec", "v1")
    ret = make_fn("v_mov_b32_e32 v1, 1.0\ns_setpc_b64 s[30:31]")
    assert Liveness(ret).after(1) == LIVE_AT_EXIT            # the old profile liveness: 0


def test_render_labels_modeled(matmul):
    spec, program, prof = matmul
    text = render_windows(program, prof, hot_windows(program, prof, top=2))
    assert "modeled cycles" in text and "s_waitcnt" in text


_PC_CSV = """Sample_Timestamp,Exec_Mask,Dispatch_Id,Instruction,Instruction_Comment,Correlation_Id,Code_Object_Offset,Wave_Issued,Stall_Reason
100,0xffffffffffffffff,1,"{i0}",,1,{a0},1,NONE
101,0xffffffffffffffff,1,"{i1}",,1,{a1},0,WAITCNT
102,0x00000000ffffffff,1,"{i1}",,1,{a1},0,WAITCNT
103,0xff,2,"{i1}",,2,{a1},1,NONE
104,0x1,1,s_nop 0,,1,0x7,1,NONE
"""


def _two(program, kernel):
    ins = program.function(kernel).instructions
    return ins[0], ins[3]


def test_pc_sampling_csv(tmp_path, matmul):
    spec, program, _ = matmul
    a, b = _two(program, spec.kernel)
    path = tmp_path / "pc_sampling_host_trap.csv"
    path.write_text(_PC_CSV.format(i0=a.text, i1=b.text, a0=hex(a.address), a1=b.address))
    prof = read_pc_sampling_csv(path, program)
    fc = prof.functions[spec.kernel]
    assert prof.source == "measured" and prof.unit == "samples"
    assert (fc.executions[0], fc.executions[3]) == (1, 3)
    assert (fc.lanes[0], fc.lanes[3]) == (64, 64 + 32 + 8)
    assert (fc.stalls[0], fc.stalls[3]) == (0, 2)
    assert prof.unmatched == 1 and prof.mismatched == 0 and prof.total_cycles == 4
    one = read_pc_sampling_csv(path, program, dispatch=2)
    assert one.functions[spec.kernel].executions[3] == 1 and one.total_cycles == 1
    ws = hot_windows(program, prof, top=1)
    assert "% of measured samples" in ws[0].reason


def test_pc_sampling_absolute_pcs(tmp_path, matmul):
    spec, program, _ = matmul
    a, _ = _two(program, spec.kernel)
    path = tmp_path / "pcs.csv"
    path.write_text(f"Pc,Instruction\n{hex(0x7f0000000000 + a.address)},{a.mnemonic}\n")
    prof = read_pc_sampling_csv(path, program, pc_base=0x7f0000000000)
    assert prof.functions[spec.kernel].executions[0] == 1


def test_thread_trace_csv(tmp_path, matmul):
    spec, program, _ = matmul
    a, b = _two(program, spec.kernel)
    path = tmp_path / "att.csv"
    path.write_text(f"Code_Object_Offset,Hitcount,Latency,Stall,Idle\n"
                    f"{hex(a.address)},64,256,0,0\n{hex(b.address)},64,9000,8000,100\n")
    prof = read_thread_trace_csv(path, program)
    fc = prof.functions[spec.kernel]
    assert fc.executions[3] == 64 and fc.cycles[3] == 9000 and fc.stalls[3] == 8000
    assert prof.total_cycles == 9256


def test_bad_csv(tmp_path, matmul):
    _, program, _ = matmul
    p = tmp_path / "bad.csv"
    p.write_text("Foo,Bar\n1,2\n")
    with pytest.raises(ProfileError, match="no address column"):
        read_pc_sampling_csv(p, program)
    p.write_text("Pc\nzz\n")
    with pytest.raises(ProfileError, match="not an integer"):
        read_pc_sampling_csv(p, program)
    with pytest.raises(ProfileError, match="cannot read"):
        read_pc_sampling_csv(tmp_path / "missing.csv", program)
    p.write_text("Code_Object_Offset,Hitcount,Stall\n")        # the header alone is enough
    with pytest.raises(ProfileError, match="thread-trace CSV: no latency column; need Latency"):
        read_thread_trace_csv(p, program)
    p.write_text("Pc,Exec_Mask\n0x0,0xff\n0x4\n")
    with pytest.raises(ProfileError, match=r"bad.csv:3: 1 fields, the header has 2"):
        read_pc_sampling_csv(p, program)


def test_profile_command(capsys):
    ap = argparse.ArgumentParser()
    add_parser(ap.add_subparsers())
    args = ap.parse_args(["profile", str(KERNELS / "asm_copy"), "--top", "2"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "modeled cycles" in out and "#1 asm_copy[" in out and "global_load_dword" in out


def _regions(res, kernel):
    n = len(res.issue[kernel])
    return [(0, n // 2, 0, n // 2, "first half"), (n // 2, n, n // 2, n, "second half")]


def test_explanation_terms_add_up_to_the_change_and_name_occupancy():
    """An edit that frees registers so more waves fit: the terms (windows, the overlap
    term named for the occupancy change, the launch) sum to the change in modeled cycles."""
    from asmevo.timing.model import load_params, model_launch
    from asmevo.launch.spec import make_inputs
    from asmevo.profile.explain import explain, summarize
    from tests.timing.test_timing import _LOAD, _USE, _WAIT, _build, _spec

    body = "\n".join([_LOAD, _WAIT, _USE])
    spec = _spec(load_params("gfx942").compute_units * 32)
    values = make_inputs(spec)
    fat = model_launch(_build(body, nv=256), spec, values)
    lean = model_launch(_build(body, nv=16), spec, values)
    rows = explain(fat, lean, _regions(fat, "k"), "k")
    assert sum(r["delta"] for r in rows) == pytest.approx(lean.cycles - fat.cycles, abs=1e-6)
    over = next(r for r in rows if r["window"] == "parallelism")
    assert "occupancy 2 -> 8" in over["label"] and over["delta"] < 0
    short = summarize(rows, top=1)
    assert sum(r["delta"] for r in short) == pytest.approx(lean.cycles - fat.cycles, abs=1e-6)
    assert len(short) <= 4
