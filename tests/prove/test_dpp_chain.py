"""A DPP reduction's terms, and a window whose difference disjunction runs out of time.

A DPP that writes every lane (row_mask and bank_mask 0xf, bound_ctrl) writes as any
instruction does, so the register it wrote reads back as its new value: the chain
does not carry (and substitute at every step) every earlier value of its registers,
which took tri_topk_gating's 576-instruction block past 20 minutes. One that leaves
lanes out keeps their old value. Where the disjunction of a window's differences is
undecided, they are asked one at a time, registers first."""
from __future__ import annotations

from asmevo.prove import equiv
from asmevo.prove.machine import Context, Machine
from asmevo.prove.registry import execute
from asmevo.prove.term import at_lane
from asmevo.prove.z3env import z3

CHAIN = ("row_shr:1", "row_shr:2", "row_shr:4", "row_shr:8", "row_bcast:31")


def _symbols(t) -> set[str]:
    seen, names, todo = set(), set(), [t]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and not z3.is_bv_value(x):
            names.add(x.decl().name())
        todo.extend(x.children())
    return names


def _reduction(row_mask: str) -> Machine:
    m = Machine(Context(0x2F0))
    execute(m, "v_max_f32_e32 v1, v0, v0")
    for ctrl in CHAIN:
        execute(m, f"v_mov_b32_dpp v2, v1 {ctrl} row_mask:{row_mask} bank_mask:0xf "
                   "bound_ctrl:1")
        execute(m, "v_max_f32_e32 v1, v1, v2")
    return m


def test_a_dpp_writing_every_lane_reads_back_as_its_new_value():
    m = _reduction("0xf")
    # v2's entry value is in no lane the reduction reads: every DPP wrote all of them
    assert "v2" not in _symbols(m.vget(1))
    assert _symbols(m.vget(1)) == {"lane", "s126", "s127", "v0", "v1"}
    on = m.active()
    v2 = m.vget(2)
    assert z3.is_app_of(v2, z3.Z3_OP_ITE) and v2.arg(0).eq(on)     # If(EXEC's bit, new, old)
    assert m.vuse(2).eq(v2.arg(1))


def test_a_dpp_leaving_lanes_out_keeps_their_old_value():
    m = _reduction("0xa")           # rows 1 and 3 written: rows 0 and 2 keep v2's entry value
    assert "v2" in _symbols(m.vget(1))
    kept = at_lane(m.vget(2) != m.ctx.vgpr(2), 0)
    s = z3.Solver()
    s.add(kept)
    assert s.check() == z3.unsat
    written = at_lane(m.vget(2) != m.ctx.vgpr(2), 16)
    s = z3.Solver()
    s.add(written)
    assert s.check() == z3.sat


def test_differences_one_at_a_time_registers_first():
    ctx = Context(0x2F0)
    x, y = z3.BitVec("x", 32), z3.BitVec("y", 32)
    mem = z3.Array("m", z3.BitVecSort(62), z3.BitVecSort(32))
    asked = []
    real = equiv.solver

    def spy(c, terms, timeout_ms):
        asked.append(terms[0])
        return real(c, terms, timeout_ms)
    equiv.solver = spy
    try:
        diffs = [("memory", z3.Select(mem, 0) != z3.Select(mem, 0)), ("v3", x + y != y + x),
                 ("s2", x != y)]
        s, got = equiv.one_by_one(ctx, diffs, [], 1000)
        assert got == z3.sat and z3.is_true(s.model().eval(x != y))
        assert [str(d) for d in asked] == [str(diffs[1][1]), str(diffs[2][1])]
        asked.clear()
        same = [("memory", z3.Select(mem, 0) != z3.Select(mem, 0)), ("v3", x + y != y + x)]
        s, got = equiv.one_by_one(ctx, same, [], 1000)
        assert got == z3.unsat and len(asked) == 2
        many = [(f"s{i}", x + i != i + x) for i in range(equiv.ONE_BY_ONE + 1)]
        assert equiv.one_by_one(ctx, many, [], 1000) is None       # not all asked: no proof
        ctx.deadline = 0.0                                          # the budget spent
        assert equiv.one_by_one(ctx, diffs, [], 1000) is None
    finally:
        equiv.solver = real
