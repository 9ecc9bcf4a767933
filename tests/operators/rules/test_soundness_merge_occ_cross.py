"""Every edit ``merge_loads``, ``trim_registers`` and the crossovers produce on real
kernels is built, gated and bit-equal to K0 (a handful of kernels x ~10 seeds)."""
from __future__ import annotations

import random
import warnings

import pytest

from asmevo.edits import Edit
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.operator import OperatorContext, Rejected, get_operator
from tests.operators.rules.helpers import KERNELS, Individual, kernel

SEEDS = range(10)
_seen: dict[tuple, str] = {}


def verdict(name: str, edits) -> str:
    key = (name, tuple(e.key for e in edits))
    if key not in _seen:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx = EvalContext(spec_path=str(KERNELS / name), size="small", timing="none",
                              isolate=False)
            ev = evaluate_candidate(ctx, tuple(edits))
        _seen[key] = f"{ev.verdict.status}: {ev.verdict.reason}"
    return _seen[key]


def propose(op_name: str, name: str, seed: int, parent, mate=None):
    kname, program = kernel(name)
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(seed),
                          program_of=lambda ind: apply_edits(program, ind.edits))
    op = get_operator(op_name)
    return op.crossover(parent, mate, ctx) if mate is not None else op.mutate(parent, ctx)


def split_load_parent() -> Individual:
    """asm_scale with its ``global_load_dwordx2`` split into two dword loads into
    swapped, renamed registers (what merge_loads must undo)."""
    kname, _ = kernel("asm_scale")
    return Individual([Edit(kname, 18, 22, (
        "global_load_dword v11, v[4:5], off offset:4", "global_load_dword v10, v[4:5], off",
        "s_waitcnt vmcnt(0)", "v_mul_f32_e32 v8, s8, v10", "v_mul_f32_e32 v9, s8, v11"),
        operator="split")])


@pytest.mark.slow
@pytest.mark.parametrize("parent", ["k0", "split"])
def test_merge_loads_edits_are_equal(parent):
    par = Individual() if parent == "k0" else split_load_parent()
    if par.edits:
        assert verdict("asm_scale", par.edits).startswith("equal")
    made = 0
    for seed in SEEDS:
        edit = propose("merge_loads", "asm_scale", seed, par)
        if isinstance(edit, Rejected):
            continue
        made += 1
        assert verdict("asm_scale", par.edits + (edit,)).startswith("equal"), edit
    assert made


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vector_add", "tri_softmax"])
def test_trim_registers_gives_back_an_over_allocation(name):
    kname, program = kernel(name)
    kd = program.function(kname).kernel.descriptor
    raised = Edit(kname, 0, 0, (), operator="raise", descriptor=(
        ("granulated_workitem_vgpr_count", kd.granulated_workitem_vgpr_count + 3),
        ("granulated_wavefront_sgpr_count", kd.granulated_wavefront_sgpr_count + 2)))
    par = Individual([raised])
    for seed in SEEDS[:3]:
        edit = propose("trim_registers", name, seed, par)
        assert not isinstance(edit, Rejected)
        assert verdict(name, par.edits + (edit,)).startswith("equal"), edit


def _evolved(name: str, n: int = 4) -> list[Individual]:
    """Accepted individuals with one or two schedule/merge edits."""
    out = []
    for seed in range(3 * n):
        for op in ("schedule", "merge_loads"):
            par = out[seed % len(out)] if out and seed % 3 == 2 else Individual()
            e = propose(op, name, seed, par)
            if not isinstance(e, Rejected) and len(par.edits) < 2:
                ind = Individual(par.edits + (e,))
                if verdict(name, ind.edits).startswith("equal"):
                    out.append(ind)
        if len(out) >= n:
            break
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tri_softmax", "layernorm", "asm_scale"])
@pytest.mark.parametrize("op", ["window_crossover", "block_crossover"])
def test_crossover_edits_are_equal(name, op):
    pool = _evolved(name)
    assert len(pool) >= 2
    for seed in SEEDS:
        rng = random.Random(seed)
        a, b = rng.sample(pool, 2)
        edit = propose(op, name, seed, a, b)
        if not isinstance(edit, Rejected):
            assert verdict(name, a.edits + (edit,)).startswith("equal"), edit
