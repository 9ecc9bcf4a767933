"""``merge_loads``: hand-written windows with their exact merged output."""
from __future__ import annotations

import random
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.operator import OperatorContext, Rejected, get_operator
from asmevo.operators.rules.merge import Refuse, merged_text, parse_load, plan_merge, with_waits
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


# Hand-written windows and the exact window merge_loads makes of each (data/merge_windows.toml).
WINDOWS = tomllib.loads((Path(__file__).parent / "data" / "merge_windows.toml").read_text())["window"]


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: w["name"])
def test_window_merges_into_exactly(window):
    i, j = window["loads"]
    assert merge(window["source"], i, j) == window["merged"].splitlines()


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
