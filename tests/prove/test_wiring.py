"""The prover's place in the product: the config key, what an evaluation context
carries, and where coverage is reported (report, ablation cells)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from asmevo.engine.config import ConfigError, parse_config
from asmevo.engine.report import coverage_table
from asmevo.verdict import coverage_of
from asmevo.verify.errors import VerifyError
from asmevo.verify.evaluate import EvalContext
from tests.engine.helpers import ROOT, config_text


def test_run_proof_is_a_checked_config_key():
    text = config_text()
    assert parse_config(text, base_dir=ROOT).run.proof == "on"
    on = text.replace('size = "small"', 'size = "small"\nproof = "require"')
    assert parse_config(on, base_dir=ROOT).run.proof == "require"
    with pytest.raises(ConfigError, match="run.proof"):
        parse_config(text.replace('size = "small"', 'size = "small"\nproof = "always"'),
                     base_dir=ROOT)


def test_the_proof_setting_keeps_old_evaluation_keys():
    base = EvalContext(spec_path="x")
    assert base.identity() == EvalContext(spec_path="x", proof="on").identity()
    assert "proof='off'" in EvalContext(spec_path="x", proof="off").identity()
    with pytest.raises(VerifyError):
        EvalContext(spec_path="x", proof="maybe")


def test_coverage_counts_per_operator():
    det = lambda cov: json.dumps({"coverage": cov})  # noqa: E731
    inds = pd.DataFrame({
        "operator": ["k0", "schedule", "schedule", "schedule", "peephole", "peephole"],
        "status": ["equal", "equal", "equal", "refuted", "equal", "mismatch"],
        "details": [det("proved"), det("proved"), det("tested"), "{}", "{}", "{}"],
        "first": [True, True, True, True, True, True]})
    t = coverage_table(inds).set_index("operator")
    assert t.loc["schedule"].tolist() == [2, 1, 1]
    assert t.loc["peephole"].tolist() == [1, 0, 0]
    assert coverage_of("{}") == "tested" and coverage_of('{"coverage": "proved"}') == "proved"


def test_the_coverage_label_names_a_tests_launches():
    from asmevo.verdict import coverage_label
    assert coverage_label({"coverage": "proved", "launches": 9}) == "proved"
    assert coverage_label(json.dumps({"coverage": "tested", "launches": 12})) == \
        "tested (12 launches)"
    assert coverage_label({"launches": 1}) == "tested (1 launch)"    # before the prover
    assert coverage_label({"coverage": "tested"}) == coverage_label("not json") == "tested"


def test_run_proof_budget_is_a_checked_config_key_that_keeps_old_keys():
    from asmevo.prove.stage import BUDGET_S
    text = config_text()
    assert parse_config(text, base_dir=ROOT).run.proof_budget == BUDGET_S
    five = text.replace('size = "small"', 'size = "small"\nproof_budget = 5')
    assert parse_config(five, base_dir=ROOT).run.proof_budget == 5.0
    for bad in ("0", "-1", '"fast"', "1e9", "true"):
        with pytest.raises(ConfigError, match="run.proof_budget"):
            parse_config(text.replace('size = "small"', f'size = "small"\nproof_budget = {bad}'),
                         base_dir=ROOT)
    # the default keeps the evaluation keys archives were written with; another budget
    # is another evaluation context (a proof cut at 5 s may say unknown where 30 s proves)
    assert EvalContext(spec_path="x").identity() == \
        EvalContext(spec_path="x", proof_budget=BUDGET_S).identity()
    assert "proof_budget=5.0" in EvalContext(spec_path="x", proof_budget=5.0).identity()
    with pytest.raises(VerifyError):
        EvalContext(spec_path="x", proof_budget=0)


def test_the_prove_stage_gets_the_runs_budget(monkeypatch):
    from types import SimpleNamespace

    import asmevo.prove.stage as stage
    from asmevo.verify.pipeline import Candidate, Setting, _prove
    seen = {}

    def judge(k0, cand, kernel, mode, budget_s=None, block=None):
        seen.update(budget_s=budget_s, mode=mode, block=block)
        return None, {"coverage": "tested", "proof": {"status": "unknown"}}
    monkeypatch.setattr(stage, "judge", judge)
    s = Setting(SimpleNamespace(provable=True), None, object(), "k", proof="on",
                proof_budget=2.5, block=(64, 1, 1))
    out = _prove(s, Candidate(edits=(), program=object()))
    assert seen == {"budget_s": 2.5, "mode": "on", "block": (64, 1, 1)}
    assert out.details["coverage"] == "tested"
