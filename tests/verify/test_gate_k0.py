"""The static gate judges the candidate, not K0.

A HIP object whose kernel uses ``__builtin_amdgcn_s_barrier`` with an LDS write
outstanding (and another with a call while a load is in flight) is built here
with the real clang; ``asmevo verify SPEC K0 K0`` must say equal, name K0's own
problem once, and still refuse an edit that adds a new problem.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from asmevo.edits import Edit
from asmevo.verify.evaluate import EvalContext, evaluate_candidate, k0_state
from tests.conftest import KERNELS

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def built(tmp_path_factory, toolchain) -> Path:
    """A folder with barrier_lds.gfx942.co, its specs and scale_inplace's reference."""
    d = tmp_path_factory.mktemp("barrier_lds")
    for f in ("barrier_lds.hip", "lds_shift.toml", "vscale.toml", "scale_inplace.toml",
              "reference.py"):
        shutil.copy(DATA / f, d / f)
    shutil.copy(KERNELS / "hip_min.h", d / "hip_min.h")
    clang = _clang(toolchain)
    subprocess.run([str(clang), "-x", "hip", "--offload-arch=gfx942", "-nogpulib", "-nogpuinc",
                    "--cuda-device-only", "--no-gpu-bundle-output", "-O3", "-std=c++17",
                    "barrier_lds.hip", "-o", "barrier_lds.gfx942.co"], cwd=d, check=True,
                   capture_output=True)
    return d


def _clang(toolchain) -> Path:
    """clang with the AMDGPU target, as the toolchain's lookup finds it (setup.sh installs
    clang-19); a machine without one fails here rather than skip the gate's K0 tests."""
    from asmevo.targets.amdgpu.toolchain import find_clang
    return find_clang()


def _ctx(built: Path, name: str) -> EvalContext:
    return EvalContext(spec_path=str(built / f"{name}.toml"), size="small", timing="none")


def test_k0_has_the_problems_real_code_has(built):
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.analysis.gate import function_problems
    co = load(built / "barrier_lds.gfx942.co")
    prog = recover(co)
    barrier = function_problems(prog.function("lds_shift"), co.target)
    assert [(p.kind, p.rule) for p in barrier] == [("waitcnt", "barrier")]
    assert "s_barrier" in str(barrier[0]) and "ds_write_b32" in str(barrier[0])
    assert function_problems(prog.function("scale_call"), co.target)   # swappc, load in flight
    assert not function_problems(prog.function("vscale"), co.target)


@pytest.mark.parametrize("name", ["lds_shift", "vscale"])
def test_verify_k0_against_itself_is_equal_and_says_so_once(built, name, capsys):
    from asmevo.cli import main
    k0 = str(built / "barrier_lds.gfx942.co")
    rc = main(["verify", str(built / f"{name}.toml"), k0, k0, "--timeout", "120"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verdict: equal" in out
    notes = [line for line in out.splitlines() if line.startswith("note: K0 itself")]
    if name == "lds_shift":
        assert len(notes) == 1 and "s_barrier" in notes[0] and "1 static-check problem" in notes[0]
    else:   # lds_shift's problem is in another kernel: not this kernel's business
        assert notes == []


def test_candidate_is_refused_only_for_a_new_problem(built):
    ctx = _ctx(built, "lds_shift")
    fn = k0_state(ctx).program.function("lds_shift")
    ins = fn.instructions
    b = next(i for i, x in enumerate(ins) if x.mnemonic == "s_barrier")
    # K0's own problem, moved by an edit above it (indices shift): still K0's, so equal
    shifted = evaluate_candidate(ctx, (Edit("lds_shift", 0, 0, ("s_nop 0",)),)).verdict
    assert shifted.status == "equal", shifted
    # a new problem: the wait before the ds_write dropped (its data is a global load)
    w = max(i for i in range(b) if ins[i].mnemonic == "s_waitcnt")
    new = evaluate_candidate(ctx, (Edit("lds_shift", w, w + 1, ()),)).verdict
    assert new.status == "waitcnt" and new.details["rule"] == "raw", new
    # the barrier problem doubled (a second outstanding write): more than K0 has
    d = next(i for i in range(b) if ins[i].mnemonic == "ds_write_b32")
    twice = evaluate_candidate(ctx, (Edit("lds_shift", b, b + 1, (
        "s_barrier", ins[d].text, "s_barrier")),)).verdict
    assert twice.status == "waitcnt" and twice.details["rule"] == "barrier", twice


def test_gate_covers_the_kernel_and_its_callees(built):
    from asmevo.targets import get_target
    from asmevo.targets.amdgpu.analysis.gate import callees
    from asmevo.targets.amdgpu import load, recover
    co = load(built / "barrier_lds.gfx942.co")
    prog = recover(co)
    assert callees(prog, "scale_call") == ["scale_call", "_Z5twicef"]
    assert callees(prog, "lds_shift") == ["lds_shift"]
    t = get_target("amdgpu")
    assert t.synchronizes(prog, "lds_shift") and not t.synchronizes(prog, "vscale")
    assert not t.synchronizes(prog, "scale_call")
    # a ready-built K1 equal to K0: nothing new in any kernel's scope
    data = (built / "barrier_lds.gfx942.co").read_bytes()
    for kernel in ("lds_shift", "vscale", "scale_call"):
        assert t.code_gate(data, co, kernel=kernel) is None
    # an edit inside the callee is checked when the caller is the kernel under search
    from asmevo.targets.amdgpu.program import Instruction
    twice = prog.function("_Z5twicef")
    assert twice.instructions[1].mnemonic == "v_fma_f32"
    edited = prog.replace_window("_Z5twicef", 1, 2, [      # a load read before its wait
        Instruction("global_load_dword v1, v[2:3], off"), Instruction("v_add_f32_e32 v0, v1, v0")])
    v = t.static_gate(edited, co, kernel="scale_call")
    assert v is not None and v.details["function"] == "_Z5twicef", v


def test_a_corpus_kernel_with_barriers_synchronizes_and_one_without_does_not():
    from asmevo.targets import get_target
    t = get_target("amdgpu")
    for name, sync in (("reduce_sum", True), ("vector_add", False)):
        st = k0_state(EvalContext(spec_path=str(KERNELS / name), size="small", timing="none"))
        assert t.synchronizes(st.program, name) is sync


# -- an in-place kernel: inout = true -----------------------------------------------------

def test_inout_buffer_starts_from_its_init_and_is_compared_after(built, capsys):
    from asmevo.cli import main
    from asmevo.verify.inputs import input_sets, poisoned
    from asmevo.launch.spec import load_spec
    spec = load_spec(built / "scale_inplace.toml", "small")
    assert [a.name for a in spec.outputs] == ["x"] and spec.args[0].inout
    sets = input_sets(spec)
    assert any(np.isnan(v["x"]).any() for _, v in sets)       # special values reach it
    _, vals = sets[0]
    assert np.array_equal(poisoned(spec, vals)["x"], vals["x"])  # not poisoned
    ctx = _ctx(built, "scale_inplace")
    assert evaluate_candidate(ctx, ()).verdict.equal
    fn = k0_state(ctx).program.function("scale_inplace")
    k = next(i for i, x in enumerate(fn.instructions) if x.mnemonic == "global_store_dword")
    v = evaluate_candidate(ctx, (Edit("scale_inplace", k, k + 1, ()),)).verdict
    assert v.status == "mismatch" and v.reason.startswith("in/out buffer x["), v
    assert "must stay unchanged" not in v.reason
    rc = main(["emulate", str(built / "scale_inplace.toml"), "--check", "--seeds", "0,1,2"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("x: matches the reference") == 3, out
