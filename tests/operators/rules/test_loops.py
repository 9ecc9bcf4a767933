"""The loop analysis the loop operators share: exit tests as inductions, trip guards
(run on the emulator against brute force), and per-value renaming (webs)."""
from __future__ import annotations

import pytest

from asmevo.operators.rules.loops import Induction, Loop, LoopRefused, guard_lines, induction
from asmevo.operators.rules.webs import renamable_groups, webs_of
from tests.emu.asmdsl import run_asm

U32 = 1 << 32


def _loop(body, branch="s_cbranch_scc0 .L0"):
    return Loop("k", ".L0", 0, len(body) + 1, tuple(body), branch)


@pytest.mark.parametrize("body, branch, want", [
    # clang's down-counter: s_add -1, exit when 0
    (["global_load_dword v5, v[2:3], off", "s_add_i32 s5, s5, -1", "s_cmp_eq_u32 s5, 0"],
     "s_cbranch_scc0 .L0", ("s5", -1, -1, "ne", False, "0")),
    # up-counter against an SGPR, counter read before its step (argmax)
    (["v_mov_b32_e32 v7, s0", "s_add_i32 s0, s0, 1", "s_cmp_eq_u32 s5, s0"],
     "s_cbranch_scc0 .L0", ("s0", 1, 1, "ne", False, "s5")),
    # scc1 back-branch on lg; step 2 by s_sub of -2... written as s_add -2
    (["s_add_i32 s1, s1, -2", "s_cmp_lg_u32 s1, 0"], "s_cbranch_scc1 .L0",
     ("s1", -2, -2, "ne", False, "0")),
    # s_sub, signed less-than
    (["s_sub_i32 s3, s3, -4", "s_cmp_lt_i32 s3, s8"], "s_cbranch_scc1 .L0",
     ("s3", 4, 4, "lt", True, "s8")),
    # the step after the compare sets SCC itself: not the exit test
    (["s_cmp_lt_i32 s3, s8", "s_add_i32 s3, s3, 4"], "s_cbranch_scc1 .L0", None),
    # bound first: n > c is c < n; scc0 on ge is lt
    (["s_addk_i32 s4, 0x1", "s_cmp_ge_u32 s4, 100"], "s_cbranch_scc0 .L0",
     ("s4", 1, 1, "lt", False, "100")),
])
def test_exit_tests_become_inductions(body, branch, want):
    if want is None:
        with pytest.raises(LoopRefused, match="not a 32-bit scalar compare"):
            induction(_loop(body, branch))
        return
    ind = induction(_loop(body, branch))
    assert (ind.counter, ind.step, ind.delta, ind.op, ind.signed, ind.bound) == want


@pytest.mark.parametrize("body, match", [
    (["s_add_i32 s5, s5, s6", "s_cmp_eq_u32 s5, 0"], "stepped once by a constant"),
    (["s_add_i32 s5, s5, -1", "s_add_i32 s5, s5, -1", "s_cmp_eq_u32 s5, 0"],
     "stepped once"),
    (["s_add_i32 s5, s5, -1", "s_add_i32 s6, s6, 1", "s_cmp_eq_u32 s5, s6"],
     "loop-invariant"),
    (["s_add_i32 s5, s5, 1", "s_cmp_lt_i32 s5, 0"], "steps away"),
    (["v_add_u32_e32 v1, 1, v1"], "sets the SCC"),
    (["s_add_i32 s5, s5, -1", "s_cmp_eq_u64 s[4:5], 0"], "32-bit scalar compare"),
])
def test_other_exit_tests_are_refused_with_a_reason(body, match):
    with pytest.raises(LoopRefused, match=match):
        induction(_loop(body))


def _truth(ind: Induction, tests: int, c: int, n: int) -> bool:
    """Do the next ``tests`` exit tests from counter ``c`` all continue?"""
    for j in range(tests):
        t = (c + ind.delta + j * ind.step) % U32
        a, b = t, n
        if ind.signed:
            a, b = (a - U32 if a >= 1 << 31 else a), (b - U32 if b >= 1 << 31 else b)
        ok = {"ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[ind.op]
        if not ok:
            return False
    return True


def _guard_results(ind: Induction, tests: int, cases) -> list[bool]:
    """Run the guard on the emulator for every (counter, bound) case; True = passed."""
    body = []
    for k, (c, n) in enumerate(cases):
        body += [f"s_mov_b32 {ind.counter}, 0x{c % U32:x}"]
        if ind.bound_value is None:
            body += [f"s_mov_b32 {ind.bound}, 0x{n % U32:x}"]
        body += guard_lines(ind, tests, f".Lf{k}", "s30")
        body += [f"s_bitset1_b32 s{40 + k // 32}, {k % 32}", f".Lf{k}:"]
    out = run_asm("\n".join([f"s_mov_b32 s{40 + i}, 0" for i in range(len(cases) // 32 + 1)]
                            + body))
    return [bool(out.s(40 + k // 32) >> (k % 32) & 1) for k in range(len(cases))]


EDGES = [0, 1, 2, 3, 7, 8, 9, 100, 1000, 0x10000, 0x7FFFFFF0, 0x7FFFFFFF, 0x80000000, 0x80000005,
         0xFFFFFFF8, 0xFFFFFFFE, 0xFFFFFFFF]

FORMS = [Induction("s5", -1, -1, "ne", False, "0", 2, 1),       # clang's down-counter
         Induction("s0", 1, 1, "ne", False, "s6", 2, 1),        # up to an SGPR bound
         Induction("s0", 3, 0, "ne", False, "s6", 2, 1),        # compare before a step of 3
         Induction("s1", -2, -2, "ne", False, "s6", 2, 1),
         Induction("s3", 1, 1, "lt", True, "s6", 2, 1),         # signed <, SGPR bound
         Induction("s3", 4, 0, "lt", False, "s6", 2, 1),        # unsigned <
         Induction("s3", -1, -1, "gt", True, "s6", 2, 1),       # counting down to a bound
         Induction("s3", 2, 2, "lt", True, "5000", 2, 1),       # constant bounds
         Induction("s3", 1, 1, "le", True, "5000", 2, 1),
         Induction("s3", -1, 0, "ge", False, "5", 2, 1)]


@pytest.mark.parametrize("form", range(len(FORMS)))
def test_guards_are_sound_and_pass_where_iterations_remain(form):
    ind = FORMS[form]
    cases = []
    for tests in (1, 3, 7):
        for c in EDGES:
            for n in ([int(ind.bound)] if ind.bound_value is not None else EDGES):
                cases.append((tests, c, n))
    by_tests = {t: [(c, n) for tt, c, n in cases if tt == t] for t in (1, 3, 7)}
    for tests, cs in by_tests.items():
        got = _guard_results(ind, tests, cs)
        for (c, n), passed in zip(cs, got):
            if passed:
                assert _truth(ind, tests, c, n), (ind, tests, hex(c), hex(n))
        # useful: far from the bound (and from the ends of the range) it passes
        far = [(c, n) for c, n in cs if _truth(ind, tests + 40, c, n)
               and 50 < c % U32 < 0x7FFFFF00
               and (ind.bound_value is not None or 50 < n % U32 < 0x7FFFFF00)]
        assert far and all(p for (c, n), p in zip(cs, got) if (c, n) in far), (ind, tests)


def test_matmul_value_webs_rename_the_load_not_the_index_half():
    """clang's naive matmul: v5 is the sign half of v[4:5] (tied to the carried v4),
    then the loaded B element: only the second may take another register."""
    body = ["v_ashrrev_i32_e32 v5, 31, v4", "v_lshl_add_u64 v[8:9], v[4:5], 2, s[2:3]",
            "global_load_dword v7, v[2:3], off", "global_load_dword v5, v[8:9], off",
            "s_add_i32 s6, s6, -1", "v_lshl_add_u64 v[2:3], v[2:3], 0, 4",
            "v_add_u32_e32 v4, s5, v4", "s_cmp_eq_u32 s6, 0", "v_fmac_f32_e32 v6, v7, v5"]
    ws = webs_of(body)
    groups = [sorted((ws.webs[w].kind, ws.webs[w].reg, ws.webs[w].start) for w in g)
              for g in renamable_groups(ws)]
    assert sorted(groups) == [[("v", 5, 3)], [("v", 7, 2)], [("v", 8, 1), ("v", 9, 1)]]
