"""``window_crossover`` / ``block_crossover``: translation validation and exchanges."""
from __future__ import annotations

import random

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.gate import static_gate
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.operator import OperatorContext, Rejected, get_operator
from asmevo.operators.rules.crossover import diff_spans, equivalent, matched_pieces, pieces
from tests.operators.rules.helpers import Individual, kernel
from tests.targets.amdgpu.analysis.helpers import make_fn

V = lambda *rs: R.operand_mask(", ".join(f"v{r}" for r in rs))


def test_renamed_temporary_and_reordered_independent_ops_are_equivalent():
    old = ["v_add_u32_e32 v4, v1, v2", "v_mul_lo_u32 v5, v4, v3", "v_mov_b32_e32 v6, 1"]
    new = ["v_mov_b32_e32 v6, 1", "v_add_u32_e32 v9, v1, v2", "v_mul_lo_u32 v5, v9, v3"]
    assert equivalent(old, new, V(5, 6)) is None
    # v4 is live after the window in the old code, but new leaves it unwritten
    assert "v4 differs" in equivalent(old, new, V(4, 5, 6))


def test_loads_may_reorder_but_not_across_a_store():
    loads = ["global_load_dword v4, v[2:3], off", "global_load_dword v5, v[6:7], off"]
    assert equivalent(loads, loads[::-1], V(4, 5)) is None
    store = "global_store_dword v[8:9], v1, off"
    old = [loads[0], store]
    assert equivalent(old, [store, loads[0]], V(4)) is not None


def test_duplicated_instruction_is_not_equivalent():
    old = ["v_add_u32_e32 v1, v1, v2"]
    assert "v1 differs" in equivalent(old, old * 2, V(1))


def test_a_dead_extra_load_is_not_equivalent():
    # its value is dead, but the access may fault: the same reads must remain
    old = ["v_mov_b32_e32 v4, 0"]
    new = old + ["global_load_dword v9, v[2:3], off"]
    assert equivalent(old, new, V(4)) == "the memory reads differ"


def test_waits_and_nops_do_not_matter_exec_does():
    old = ["v_add_u32_e32 v1, v1, v2"]
    assert equivalent(old, ["s_nop 3", "s_waitcnt vmcnt(0)"] + old, V(1)) is None
    assert equivalent(["s_mov_b64 exec, s[4:5]"] + old, old + ["s_mov_b64 exec, s[4:5]"],
                      V(1) | R.EXEC_MASK) is not None


def test_pieces_follow_labels_and_branches():
    fn = make_fn("""
        v_mov_b32_e32 v1, 0
        s_cbranch_scc1 out
        v_mov_b32_e32 v1, 1
        out:
        s_endpgm""")
    assert pieces(fn) == [(0, 0, 2), (0, 2, 3), (1, 3, 4)]


def test_insertions_take_one_line_of_context():
    ta = ["a", "b", "c"]
    tb = ["a", "x", "b", "c"]
    spans = diff_spans(ta, tb, (0, 0, 3), (0, 0, 4))
    assert spans == [((0, 1), (0, 2))]


def _scheduled_parents(name: str):
    """Two individuals, each with one schedule edit in a different block."""
    kname, program = kernel(name)
    sched = get_operator("schedule")
    found = []
    for seed in range(40):
        ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(seed),
                              program_of=lambda ind: apply_edits(program, ind.edits))
        e = sched.mutate(Individual(), ctx)
        if e is not None and all(not (e.start < f.end and f.start < e.end) for f in found):
            found.append(e)
        if len(found) == 2:
            break
    assert len(found) == 2
    return kname, program, Individual([found[0]]), Individual([found[1]])


def test_window_crossover_combines_two_parents_improvements():
    kname, program, a, b = _scheduled_parents("layernorm")
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(0),
                          program_of=lambda ind: apply_edits(program, ind.edits))
    edit = get_operator("window_crossover").crossover(a, b, ctx)
    assert isinstance(edit, Edit), ctx.reasons
    child = apply_edits(program, a.edits + (edit,))
    assert static_gate(child) is None
    pb = apply_edits(program, b.edits)
    fb = pb.function(kname)
    fc = child.function(kname)
    assert fc.labels == fb.labels
    # the child keeps a's edit and now also carries (part of) b's
    assert fc.instructions != apply_edits(program, a.edits).function(kname).instructions


def test_block_crossover_takes_a_whole_region():
    kname, program, a, b = _scheduled_parents("layernorm")
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(1),
                          program_of=lambda ind: apply_edits(program, ind.edits))
    edit = get_operator("block_crossover").crossover(a, b, ctx)
    assert isinstance(edit, Edit), ctx.reasons
    assert static_gate(apply_edits(program, a.edits + (edit,))) is None


def test_identical_parents_give_a_reason():
    kname, program = kernel("vector_add")
    ctx = OperatorContext(k0=program, kernel=kname, rng=random.Random(0),
                          program_of=lambda ind: program)
    assert isinstance(get_operator("window_crossover").crossover(Individual(), Individual(), ctx), Rejected)
    assert isinstance(get_operator("block_crossover").crossover(Individual(), Individual(), ctx), Rejected)
    assert len(ctx.reasons) == 2


def test_matching_needs_equal_labels():
    kname, program = kernel("vector_add")
    fn = program.function(kname)
    assert matched_pieces(fn, make_fn("s_endpgm", kname)) == "the parents' labels differ"
