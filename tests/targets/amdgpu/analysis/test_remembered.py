"""The analyses remember answers (build_cfg per Function and per shape, the checks per
name and shape, the waitcnt fixed point per graph): a remembered answer must be the
answer for the function asked about, never for another one with the same name or text."""
from __future__ import annotations

from dataclasses import replace

from asmevo.targets.amdgpu.analysis.cfg import _build, build_cfg, shape
from asmevo.targets.amdgpu.analysis.hazards import _check_hazards, check_hazards
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.analysis.waitcnt import _check_waitcnts, check_waitcnts, window_states
from asmevo.targets.amdgpu.program import Function, Instruction, Label
from tests.targets.amdgpu.analysis.helpers import make_fn

HAZARD = """
    v_cmp_eq_u32_e64 s[0:1], v0, v1
    v_cndmask_b32_e64 v2, v3, v4, s[0:1]
    s_endpgm"""
PADDED = """
    v_cmp_eq_u32_e64 s[0:1], v0, v1
    s_nop 1
    v_cndmask_b32_e64 v2, v3, v4, s[0:1]
    s_endpgm"""
UNWAITED = """
    global_load_dword v1, v[2:3], off
    v_add_u32_e32 v4, v1, v1
    s_endpgm"""
WAITED = """
    global_load_dword v1, v[2:3], off
    s_waitcnt vmcnt(0)
    v_add_u32_e32 v4, v1, v1
    s_endpgm"""


def _at(fn: Function, base: int) -> Function:
    """``fn`` with its instructions at addresses ``base``, ``base + 4``, ..."""
    items, k = [], 0
    for i in fn.items:
        if isinstance(i, Instruction):
            i = replace(i, address=base + 4 * k)
            k += 1
        items.append(i)
    return replace(fn, items=tuple(items))


def _fresh_hazards(fn, target="gfx942"):
    return _check_hazards(fn, target_family(target), _build(fn, [i.address for i in fn.instructions]))


def test_two_functions_of_one_name_get_their_own_hazards():
    a, b = make_fn(HAZARD), make_fn(PADDED)
    assert a.name == b.name
    first, second, again = check_hazards(a, "gfx942"), check_hazards(b, "gfx942"), \
        check_hazards(a, "gfx942")
    assert [p.rule for p in first] == ["valu-sgpr-valu"] and second == []
    assert first == again == _fresh_hazards(a)
    assert check_hazards(make_fn(HAZARD, name="other"), "gfx942")[0].function == "other"


def test_the_same_text_at_other_addresses_reports_its_own_addresses():
    k0, moved, bare = _at(make_fn(HAZARD), 0x100), _at(make_fn(HAZARD), 0x800), make_fn(HAZARD)
    assert shape(k0) == shape(moved) == shape(bare)
    for fn in (k0, moved, bare, k0):
        got = check_hazards(fn, "gfx942")
        assert got == _fresh_hazards(fn)
        assert [p.address for p in got] == [fn.instructions[1].address]
        assert build_cfg(fn).addresses == [i.address for i in fn.instructions]


def test_a_label_never_shapes_like_an_instruction():
    as_label = Function("k", (Label("s_endpgm"),), None, 0)
    as_text = Function("k", (Instruction("s_endpgm"),), None, 0)
    assert shape(as_label) != shape(as_text)
    assert len(build_cfg(as_label).effects) == 0 and len(build_cfg(as_text).effects) == 1


def test_build_cfg_is_the_graph_of_the_function_asked_about():
    a = make_fn("s_cbranch_scc1 out\nv_mov_b32_e32 v1, 0\nout:\ns_endpgm")
    b = make_fn("s_branch out\nv_mov_b32_e32 v1, 0\nout:\ns_endpgm")
    ga, gb = build_cfg(a), build_cfg(b)
    assert build_cfg(a) is ga
    assert ga.reachable == [True, True, True] and gb.reachable == [True, False, True]
    assert ga == _build(a, [None] * 3) and gb == _build(b, [None] * 3)


def test_two_functions_of_one_name_get_their_own_waitcnt_problems():
    a, b = _at(make_fn(UNWAITED), 0x40), make_fn(WAITED)
    got_a, got_b = check_waitcnts(a), check_waitcnts(b)
    assert [(p.rule, p.index, p.address) for p in got_a] == [("raw", 1, 0x44)] and got_b == []
    assert check_waitcnts(a) == got_a == _check_waitcnts(a, _build(a, [0x40, 0x44, 0x48]))
    assert [p.address for p in check_waitcnts(make_fn(UNWAITED))] == [None]


def test_window_states_follow_the_function_asked_about():
    a, b = make_fn(UNWAITED), make_fn(WAITED)
    _, after_a = window_states(a, 0, 1)
    before_b, after_b = window_states(b, 2, 3)
    assert after_a.vm and before_b.empty() and after_b.empty()
    assert window_states(a, 0, 1)[1] == after_a
