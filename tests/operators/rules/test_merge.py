"""``merge_loads``: hand-written windows with their exact merged output."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.operator import OperatorContext, Rejected, get_operator
from operators.rules.merge import Refuse, merged_text, parse_load, plan_merge, with_waits
from tests.operators.rules.helpers import Individual, kernel
from tests.targets.amdgpu.analysis.helpers import make_fn


def program_with(src: str):
    """vector_add's K0 program with its kernel's code replaced by ``src``."""
    name, program = kernel("vector_add")
    fn = program.function(name)
    return name, program.with_function(replace(fn, items=make_fn(src, name).items, edited=True))


def merge(src: str, i: int, j: int) -> list[str]:
    name, program = program_with(src)
    fn = program.function(name)
    cfg = build_cfg(fn)
    end, lines, _ = plan_merge(fn, program, i, j, Liveness(fn, cfg), cfg)
    return with_waits(fn, i, end, lines)


def test_adjacent_global_dwords_into_their_own_aligned_pair():
    assert merge("""
        global_load_dword v4, v[2:3], off offset:16
        v_mov_b32_e32 v9, 1
        global_load_dword v5, v[2:3], off offset:20
        s_waitcnt vmcnt(1)
        v_add_u32_e32 v6, v4, v9
        s_waitcnt vmcnt(0)
        v_add_u32_e32 v6, v6, v5
        global_store_dword v[2:3], v6, off
        s_endpgm""", 0, 2) == [
        "global_load_dwordx2 v[4:5], v[2:3], off offset:16",
        "v_mov_b32_e32 v9, 1",
        "s_waitcnt vmcnt(0)",
        "v_add_u32_e32 v6, v4, v9",
        "v_add_u32_e32 v6, v6, v5",
        "global_store_dword v[2:3], v6, off",
        "s_endpgm"]


def test_odd_destinations_are_renamed_into_a_free_even_pair_up_to_their_redefinition():
    # v5/v6 is not an aligned pair: the values move to free v[0:1]; the later
    # v_mov redefines v5, so the store of v5 keeps its name
    assert merge("""
        global_load_dword v5, v[2:3], off
        global_load_dword v6, v[2:3], off offset:4
        s_waitcnt vmcnt(0)
        v_add_u32_e32 v7, v5, v6
        v_mov_b32_e32 v5, 0
        global_store_dword v[2:3], v7, off
        global_store_dword v[2:3], v5, off offset:4
        s_endpgm""", 0, 1) == [
        "global_load_dwordx2 v[0:1], v[2:3], off",
        "s_waitcnt vmcnt(0)",
        "v_add_u32_e32 v7, v0, v1",
        "v_mov_b32_e32 v5, 0",
        "global_store_dword v[2:3], v7, off",
        "global_store_dword v[2:3], v5, off offset:4",
        "s_endpgm"]


def test_scalar_pair_with_natural_alignment():
    assert merge("""
        s_load_dword s4, s[0:1], 0x8
        s_load_dword s5, s[0:1], 0xc
        s_waitcnt lgkmcnt(0)
        s_add_u32 s6, s4, s5
        v_mov_b32_e32 v1, s6
        global_store_dword v[2:3], v1, off
        s_endpgm""", 0, 1) == [
        "s_load_dwordx2 s[4:5], s[0:1], 0x8",
        "s_waitcnt lgkmcnt(0)",
        "s_add_u32 s6, s4, s5",
        "v_mov_b32_e32 v1, s6",
        "global_store_dword v[2:3], v1, off",
        "s_endpgm"]


def test_lds_reads_become_read2_with_their_own_offsets():
    assert merge("""
        ds_read_b32 v4, v1 offset:64
        ds_read_b32 v5, v1 offset:16
        s_waitcnt lgkmcnt(0)
        v_add_u32_e32 v0, v4, v5
        global_store_dword v[2:3], v0, off
        s_endpgm""", 0, 1) == [
        "ds_read2_b32 v[4:5], v1 offset0:16 offset1:4",
        "s_waitcnt lgkmcnt(0)",
        "v_add_u32_e32 v0, v4, v5",
        "global_store_dword v[2:3], v0, off",
        "s_endpgm"]


@pytest.mark.parametrize("first, second, why", [
    ("global_load_dword v4, v[2:3], off", "global_load_dword v5, v[2:3], off offset:8", "combine"),
    ("global_load_dword v4, v[2:3], off sc0", "global_load_dword v5, v[2:3], off offset:4",
     "combine"),
    ("global_load_dword v4, v[2:3], off", "global_load_dword v5, v[6:7], off offset:4", "combine"),
    ("s_load_dword s5, s[0:1], 0xc", "s_load_dword s6, s[0:1], 0x10", "combine"),
])
def test_pairs_that_do_not_combine(first, second, why):
    a, b = parse_load(0, first), parse_load(1, second)
    assert a is not None and b is not None
    assert merged_text(a, b, 0) is None


def test_buffer_loads_are_not_merged():
    # out-of-range checking could zero the upper half where the narrow load read data
    assert parse_load(0, "buffer_load_dword v3, v1, s[12:15], 0 offen") is None


@pytest.mark.parametrize("between, why", [
    ("global_store_dword v[8:9], v7, off", "may write"),
    ("s_barrier", "fence"),
    ("v_mov_b32_e32 v2, 0", "rewrites the address"),
    ("s_mov_b64 exec, s[4:5]", "EXEC"),
])
def test_nothing_moves_the_second_load_across(between, why):
    with pytest.raises(Refuse, match=why):
        merge(f"""
            global_load_dword v4, v[2:3], off
            {between}
            global_load_dword v5, v[2:3], off offset:4
            s_waitcnt vmcnt(0)
            v_add_u32_e32 v6, v4, v5
            global_store_dword v[2:3], v6, off
            s_endpgm""", 0, 2)


def test_live_out_odd_pair_is_refused():
    # v5 and v6 are both used after the branch: they must keep their names, and
    # v[5:6] is not an aligned tuple
    with pytest.raises(Refuse):
        merge("""
            global_load_dword v5, v[2:3], off
            global_load_dword v6, v[2:3], off offset:4
            s_branch next
            next:
            s_waitcnt vmcnt(0)
            v_add_u32_e32 v7, v5, v6
            global_store_dword v[2:3], v7, off
            s_endpgm""", 0, 1)


def test_second_load_register_read_in_between_keeps_its_old_value():
    # v5 is read (old value) before the second load: v[4:5] cannot take the
    # second load early, so both values move to free v[0:1]
    assert merge("""
        global_load_dword v4, v[2:3], off
        v_add_u32_e32 v9, v5, v5
        global_load_dword v5, v[2:3], off offset:4
        s_waitcnt vmcnt(0)
        v_add_u32_e32 v6, v4, v5
        v_add_u32_e32 v6, v6, v9
        global_store_dword v[2:3], v6, off
        s_endpgm""", 0, 2) == [
        "global_load_dwordx2 v[0:1], v[2:3], off",
        "v_add_u32_e32 v9, v5, v5",
        "s_waitcnt vmcnt(0)",
        "v_add_u32_e32 v6, v0, v1",
        "v_add_u32_e32 v6, v6, v9",
        "global_store_dword v[2:3], v6, off",
        "s_endpgm"]


def test_operator_edit_applies_and_passes_the_gate():
    from asmevo.targets.amdgpu.analysis.gate import static_gate
    name, program = program_with("""
        s_load_dword s4, s[0:1], 0x8
        s_load_dword s5, s[0:1], 0xc
        s_waitcnt lgkmcnt(0)
        v_mov_b32_e32 v1, s4
        v_mov_b32_e32 v2, s5
        global_store_dwordx2 v[4:5], v[1:2], off
        s_endpgm""")
    ctx = OperatorContext(k0=program, kernel=name, rng=random.Random(0),
                          program_of=lambda ind: program)
    edit = get_operator("merge_loads").mutate(Individual(), ctx)
    assert edit is not None, ctx.reasons
    assert edit.lines == ("s_load_dwordx2 s[4:5], s[0:1], 0x8",)
    assert (edit.start, edit.end) == (0, 2)
    assert static_gate(apply_edit(program, edit)) is None


def test_no_pair_gives_a_reason():
    name, program = kernel("vector_add")
    ctx = OperatorContext(k0=program, kernel=name, rng=random.Random(0),
                          program_of=lambda ind: program)
    assert isinstance(get_operator("merge_loads").mutate(Individual(), ctx), Rejected)
    assert ctx.reasons
