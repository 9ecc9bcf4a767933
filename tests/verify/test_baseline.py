"""K0's verification state is one Baseline per context and process, passed down from
evaluate; nothing below evaluate calls back up into it."""
from __future__ import annotations

import ast
from pathlib import Path

from asmevo.verify import evaluate as ev
from asmevo.verify.baseline import BASELINES, Baseline, k0_state
from asmevo.verify.evaluate import EvalContext
from tests.conftest import KERNELS

VERIFY = Path(ev.__file__).parent


def _ctx(**kw) -> EvalContext:
    return EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", seeds=(0,), **kw)


def test_a_context_builds_its_baseline_once_and_every_stage_gets_that_one():
    ctx = _ctx(timing="none")
    BASELINES.clear()
    base = k0_state(ctx)
    assert isinstance(base, Baseline) and base.ctx == ctx
    assert k0_state(_ctx(timing="none")) is base           # an equal context: the same one
    assert BASELINES.stats()["misses"] == 1 and BASELINES.stats()["hits"] == 1
    s = ev.setting(ctx)
    assert s.judge.base is base and s.program is base.program
    assert base.reference is base.coverage.main and base.reference.k0 == base.k0_bytes


def test_timing_state_is_computed_on_first_use_and_kept_in_the_baseline():
    base = k0_state(_ctx(timing="modeled"))
    ts = base.timing_inputs()
    assert base.timing_inputs() is ts and ts.spec is base.spec      # one size: its own spec
    ref = base.timing_reference()
    assert ref is not None and base.timing_reference() is ref
    assert list(ref.results) == [f"seed{base.timing_seed[0]}"]


def test_the_baseline_checks_k0_itself_equal():
    base = k0_state(_ctx(timing="none"))
    v = base.check(base.k0_bytes)
    assert v.status == "equal" and v.details["launches"] >= 1


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_the_flow_goes_one_way():
    for name in ("baseline", "context", "differential", "launches", "timing", "inputs",
                 "members", "overlaps"):
        assert "asmevo.verify.evaluate" not in _imports(VERIFY / f"{name}.py"), name
