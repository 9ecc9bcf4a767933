"""Soundness of ``schedule``, ``waitcnt_relax`` and ``peephole`` on real kernels.

Every edit they propose claims to keep K0's semantics, so every one must come
back ``equal`` from the verifier: on K0, and (where the rule needs rewritten
code to find work) on top of a schedule. A shortened verification (one seeded
input set plus the special values, one run, in process) keeps this test near a
minute; ``experiments/bench_operators.py`` runs the full 200-application sweep.
"""
from __future__ import annotations

import pytest

from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import Rejected, get_operator
from tests.operators.rules.helpers import KERNELS, Individual, context

CORPUS = ("vector_add", "softmax", "tri_softmax", "tri_matmul_fp16", "asm_copy", "layernorm")
OPERATORS = ("schedule", "waitcnt_relax", "peephole")
SEEDS = range(6)


def _verify(name: str, edits):
    ctx = EvalContext(spec_path=str(KERNELS / name), size="small", timing="none", seeds=(0,),
                      runs=1, isolate=False)
    return evaluate_candidate(ctx, tuple(edits)).verdict


@pytest.mark.parametrize("name", CORPUS)
def test_every_proposed_edit_is_equal(name):
    ops = {o: get_operator(o) for o in OPERATORS}
    checked: dict[str, str] = {}
    produced = {o: 0 for o in OPERATORS}
    bad = []
    for seed in SEEDS:
        base = ops["schedule"].mutate(Individual(), context(name, seed))
        parents = [()] + ([(base,)] if not isinstance(base, Rejected) else [])
        for parent in parents:
            for o, op in ops.items():
                edit = op.mutate(Individual(parent), context(name, seed))
                if isinstance(edit, Rejected):
                    continue
                produced[o] += 1
                edits = parent + (edit,)
                key = "|".join(e.key for e in edits)
                if key not in checked:
                    checked[key] = _verify(name, edits).status
                if checked[key] != "equal":
                    bad.append((o, seed, [str(e) for e in edits], checked[key]))
    assert not bad, bad
    assert produced["schedule"] > 0, produced
