"""term.has_lane (a walk on z3's C functions, memoized by term id, and noted for what
at_lane and each_lane substitute) against a plain walk of every subterm."""
from __future__ import annotations

from asmevo.prove import term
from asmevo.prove.machine import Context, Machine
from asmevo.prove.registry import execute
from asmevo.prove.z3env import z3

WINDOW = ["v_cmp_gt_i32_e32 vcc, s6, v1", "v_cndmask_b32_e32 v3, v5, v3, vcc",
          "v_max_f32_e32 v5, v3, v3",
          "v_mov_b32_dpp v8, v5 row_shr:8 row_mask:0xf bank_mask:0xf bound_ctrl:1",
          "v_max_f32_e32 v5, v5, v8",
          "v_mov_b32_dpp v8, v5 row_bcast:15 row_mask:0xa bank_mask:0xf bound_ctrl:1",
          "v_add_u32_e32 v5, v5, v8", "v_readlane_b32 s0, v5, 63",
          "v_readfirstlane_b32 s1, v5", "ds_bpermute_b32 v9, v2, v5",
          "v_mov_b32_e32 v10, s0", "ds_write_b32 v7, v10",
          "buffer_store_dword v9, v2, s[8:11], s12 offen", "global_load_dword v11, v[12:13], off"]


def _plain(roots) -> tuple[list, dict]:
    """Every subterm of ``roots`` (children before parents) and, by term id, whether it
    depends on LANE: the Python API's walk."""
    order, dep, stack = [], {}, [(x, False) for x in roots]
    while stack:
        x, expanded = stack.pop()
        if x.get_id() in dep:
            continue
        kids = [x.body()] if z3.is_quantifier(x) else x.children()
        if expanded:
            dep[x.get_id()] = x.eq(term.LANE) or any(dep[k.get_id()] for k in kids)
            order.append(x)
            continue
        stack.append((x, True))
        stack.extend((k, False) for k in kids if k.get_id() not in dep)
    return order, dep


def test_has_lane_agrees_with_a_plain_walk_of_every_subterm():
    term._HAS_LANE.clear()
    ctx = Context(0x2F0)
    m = Machine(ctx)
    for text in WINDOW:
        execute(m, text)
    roots = list(m.v.values()) + list(m.s.values()) + [ctx.expand(m.mem), ctx.expand(m.lds)]
    roots += list(m.faults.values()) + term.each_lane(m.vget(9))[:3]
    subs, dep = _plain(roots)
    assert len(subs) > 500
    for x in reversed(subs):        # parents before children, then the other way round
        assert term.has_lane(x) == dep[x.get_id()], x.sexpr()[:200]
    assert 0 < sum(dep.values()) < len(subs)
    term._HAS_LANE.clear()
    for x in subs:
        assert term.has_lane(x) == dep[x.get_id()], x.sexpr()[:200]
