"""The candidate pipeline: named stages in order, each refusing with its own verdict,
one stage at a time from the command line, and one identity for every evaluator."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from asmevo.edits import Edit, edits_to_json
from asmevo.errors import AsmevoError
from asmevo.verify.evaluate import (EvalContext, build_candidate, evaluate_candidate, k0_state,
                                    setting)
from asmevo.verify.pipeline import (CANDIDATE, Candidate, candidate_key, edits_key, run,
                                    stages_until)
from tests.conftest import KERNELS, ROOT

SOFTMAX = KERNELS / "softmax"
CTX = EvalContext(spec_path=str(SOFTMAX), size="small")


def _edit(start, end, lines):
    return Edit(k0_state(CTX).spec.kernel, start, end, tuple(lines))


def _lines(*idx):
    ins = k0_state(CTX).program.function(k0_state(CTX).spec.kernel).instructions
    return [ins[i].text for i in idx]


def test_the_lines_these_edits_expect():
    assert _lines(28, 29, 44, 45) == ["s_waitcnt vmcnt(0)", "v_max_f32_e32 v6, v6, v6",
                                      "v_max_f32_e32 v1, v3, v3", "v_max_f32_e32 v2, v2, v2"]


@pytest.mark.parametrize("edits, refused, status", [
    (lambda: (_edit(44, 46, _lines(45, 44)),), None, "equal"),
    (lambda: (_edit(10_000, 10_001, ["s_nop 0"]),), "apply", "invalid"),
    (lambda: (_edit(28, 29, []),), "gate", "waitcnt"),
    (lambda: (_edit(29, 30, ["v_mov_b32_e32 v6, 0"]),), "differential", "mismatch"),
], ids=["equal", "apply", "gate", "differential"])
def test_each_stage_refuses_with_its_own_verdict(edits, refused, status):
    edits = edits()
    stage, cand, verdict = run(setting(CTX), Candidate(edits), CANDIDATE)
    assert (stage, verdict.status) == (refused, status), verdict
    ev = evaluate_candidate(CTX, edits)              # the evaluator is this pipeline
    assert ev.verdict == verdict and ev.code_sha256 == candidate_key(cand.data, edits)
    if refused is None:
        assert cand.timing is not None and "hot_windows" in verdict.details
    if refused in ("apply", "gate"):
        assert cand.data is None and ev.code_sha256 == edits_key(edits)


def test_until_stops_after_the_named_stage():
    edits = (_edit(28, 29, []),)
    assert run(setting(CTX), Candidate(edits), CANDIDATE, until="apply")[0] is None
    stage, cand, verdict = run(setting(CTX), Candidate(edits), CANDIDATE, until="gate")
    assert stage == "gate" and cand.program is not None and verdict.status == "waitcnt"
    ok = (_edit(44, 46, _lines(45, 44)),)
    stage, cand, verdict = run(setting(CTX), Candidate(ok), CANDIDATE, until="abi")
    assert stage is None and verdict is None and cand.timing is None
    assert (cand.data, None) == build_candidate(CTX, ok)
    assert stages_until(CANDIDATE, "build") == ("apply", "gate", "build")
    with pytest.raises(AsmevoError, match="no stage 'link'"):
        stages_until(CANDIDATE, "link")


def _asmevo(*args):
    return subprocess.run([sys.executable, "-m", "asmevo.cli", *map(str, args)], cwd=ROOT,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=300)


def test_cli_runs_stages_alone(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(edits_to_json((_edit(44, 46, _lines(45, 44)),)))
    out = tmp_path / "k1.co"
    proc = _asmevo("candidate", SOFTMAX, good, "--until", "build", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == ["apply: passed", "gate: passed", "build: passed"]
    assert out.read_bytes() == build_candidate(CTX, tuple(Edit.from_json(e) for e in
                                                          json.loads(good.read_text())))[0]
    bad = tmp_path / "bad.json"
    bad.write_text(edits_to_json((_edit(28, 29, []),)))
    proc = _asmevo("candidate", SOFTMAX, bad, "--json")
    assert proc.returncode == 1, proc.stderr
    res = json.loads(proc.stdout)
    assert res["passed"] == ["apply"] and res["refused_by"] == "gate"
    assert res["verdict"]["status"] == "waitcnt" and res["sha256"] is None


def test_cli_bad_edit_list_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "edits.json"
    bad.write_text("{not json")
    proc = _asmevo("candidate", SOFTMAX, bad)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr and "not JSON" in proc.stderr


def test_instruction_count_evaluator_builds_and_evaluates_under_one_identity():
    from asmevo.engine.evaluator import InstructionCountEvaluator
    k0 = KERNELS / "asm_copy" / "asm_copy.gfx942.co"
    ev = InstructionCountEvaluator.create(k0, "asm_copy")
    nop = Edit("asm_copy", 0, 0, ("s_nop 0",))
    for edits in ((), (nop,), (Edit("asm_copy", 10_000, 10_001, ()),)):
        data, refused = ev.build(edits)
        res = ev.evaluate(edits)
        assert res.code_sha256 == candidate_key(data, edits)
        assert (refused is None) == (data is not None)
        if refused is not None:
            assert res.verdict == refused and res.timing is None
    res = ev.evaluate((nop,))
    assert res.verdict.status == "equal" and res.verdict.details["verified"] is False
    assert res.timing.label == "modeled" and res.timing.candidate == res.timing.k0 + 1
