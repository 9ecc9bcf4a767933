"""``structural_crossover``: a rewrite of the mate's, re-derived on the parent (bit-equal
through the verifier)."""
from __future__ import annotations

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from asmevo.operators.rules.rederive import proposals, region_of, region_window
from tests.operators.rules.flowkit import Individual, corpus_context, corpus_program
from tests.operators.rules.helpers import KERNELS


def _parents():
    ctx = corpus_context(KERNELS, "asm_copy", 0)
    a = Individual(get_operator("address_fold").mutate(Individual(), ctx))
    b = Individual(get_operator("licm").mutate(Individual(), ctx))
    return a, b


def test_proposals_group_one_operators_consecutive_edits():
    _, b = _parents()
    assert proposals(b.edits) == [(0, 2)]
    assert proposals(b.edits + b.edits[:1]) == [(0, 3)]


def test_regions_by_label():
    kname, prog = corpus_program(KERNELS, "asm_copy")
    fn = prog.function(kname)
    assert [region_of(fn, i) for i in (0, 6, 7, 12, 19)] == \
        [None, None, "label_002C", "label_002C", "label_0070"]
    assert region_window(fn, "label_002C") == (7, 19)
    assert region_window(fn, None) == (0, 7)


def test_the_mates_hoist_is_re_derived_on_the_parent():
    a, b = _parents()
    ctx = corpus_context(KERNELS, "asm_copy", 1)
    child = get_operator("structural_crossover").crossover(a, b, ctx)
    assert [e.operator for e in child] == ["licm", "licm"]
    assert "v_mov_b32_e32 v3, 0" in child[1].lines
    edits = a.edits + child
    ectx = EvalContext(spec_path=str(KERNELS / "asm_copy"), size="small", timing="none",
                       seeds=(0, 1), runs=1, isolate=False)
    assert evaluate_candidate(ectx, edits).verdict.equal


def test_nothing_to_take_is_a_reason():
    a, _ = _parents()
    ctx = corpus_context(KERNELS, "asm_copy", 0)
    assert isinstance(get_operator("structural_crossover").crossover(a, a, ctx), Rejected)
    assert "no structural rewrite the parent lacks" in ctx.reasons[-1]
