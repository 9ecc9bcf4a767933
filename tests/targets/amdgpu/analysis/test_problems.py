"""The static gate: hazards and waitcnt over every edited function."""
from __future__ import annotations

import pytest

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.gate import static_gate
from asmevo.targets.amdgpu.analysis.problems import AnalysisError, Problem, target_family
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.verdict import Verdict
from tests.targets.amdgpu.analysis.helpers import corpus_functions


def _softmax():
    return next(f for f in corpus_functions() if f[0] == "softmax.gfx942.co:softmax")


def test_unedited_program_passes():
    _, co, prog, fn = _softmax()
    assert static_gate(prog) is None


def test_edit_that_drops_a_wait_is_a_waitcnt_verdict():
    _, co, prog, fn = _softmax()
    ins = fn.instructions
    w = next(k for k, i in enumerate(ins) if i.text == "s_waitcnt lgkmcnt(0)")
    assert any(i.mnemonic.startswith("s_load") for i in ins[:w])
    edited = apply_edits(prog, [Edit(fn.name, w, w + 1, ())])
    v = static_gate(edited)
    assert isinstance(v, Verdict) and v.status == "waitcnt"
    assert v.details["function"] == fn.name and v.details["rule"] == "raw"
    assert v.details["index"] > w - 1 and v.details["registers"]


def test_edit_that_drops_a_nop_is_a_hazard_verdict():
    _, co, prog, fn = _softmax()
    ins = fn.instructions
    k = next(k for k, i in enumerate(ins) if i.text == "s_nop 1")
    edited = apply_edits(prog, [Edit(fn.name, k, k + 1, ())])
    v = static_gate(edited)
    assert v.status == "hazard"
    assert v.details["rule"] == "valu-sgpr-valu"
    assert (v.details["required"], v.details["actual"]) == (2, 0)
    # the consumer slid up into the nop's place; it keeps its K0 address
    assert v.details["index"] == k and v.details["address"] == ins[k + 1].address


def test_a_clean_edit_passes():
    _, co, prog, fn = _softmax()
    ins = fn.instructions
    k = next(k for k, i in enumerate(ins) if i.text == "s_nop 1")
    edited = apply_edits(prog, [Edit(fn.name, k, k + 1, ("s_nop 0", "s_nop 0"))])
    assert static_gate(edited) is None


def test_target_family():
    assert target_family("gfx942") == ("gfx942", True)
    assert target_family("gfx942:xnack-") == ("gfx942", False)
    assert target_family("amdgcn-amd-amdhsa--gfx90a:xnack+") == ("gfx90a", True)
    _, co, _, _ = _softmax()
    assert target_family(co.target) == ("gfx942", True)
    assert target_family(co) == ("gfx942", True)
    with pytest.raises(AnalysisError):
        target_family("gfx1100")


def test_problem_is_printable_and_json():
    p = Problem("hazard", "trans-valu", 3, 0x1a0, "x", "k", producer=2, required=1, actual=0)
    assert "hazard/trans-valu at k:3 (0x1a0)" in str(p)
    assert p.to_json()["required"] == 1
