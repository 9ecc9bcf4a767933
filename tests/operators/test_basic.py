"""The operator registry and the engine's two baseline operators, on real code."""
from __future__ import annotations

import random

import pytest

from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.launch.spec import load_spec
from asmevo.operator import (OperatorContext, OperatorError, default_windows,
                             get_operator, known_operators, mutation)
from asmevo.operators.basic import independent
from asmevo.operator import Rejected
from tests.engine.helpers import KERNELS


@pytest.fixture(scope="module")
def k0():
    spec = load_spec(KERNELS / "asm_copy")
    return spec.kernel, recover(load(spec.code_object))


class _Ind:
    def __init__(self, edits=()):
        self.edits = tuple(edits)


def _ctx(k0, seed):
    kernel, program = k0
    return OperatorContext(k0=program, kernel=kernel, rng=random.Random(seed),
                           program_of=lambda ind: apply_edits(program, ind.edits))


def test_registry_knows_the_basic_operators():
    ops = known_operators()
    assert {"nop_remove", "swap_adjacent"} <= set(ops)
    op = get_operator("swap_adjacent", tries=3)
    assert op.kind == "mutation" and op.tries == 3


def test_registry_errors():
    with pytest.raises(OperatorError, match="unknown operator"):
        get_operator("nope")
    with pytest.raises(OperatorError, match="no parameter 'x'"):
        get_operator("nop_remove", x=1)
    with pytest.raises(OperatorError, match="registered twice"):
        mutation("nop_remove", targets=("amdgpu",))(
            type("Other", (), {"mutate": lambda self, ind, ctx: None}))
    with pytest.raises(OperatorError, match="has no mutate"):
        mutation("test_no_mutate", targets=("amdgpu",))(
            type("OnlyCrossover", (), {"crossover": lambda *a: None}))
    with pytest.raises(OperatorError, match="names no target"):
        mutation("test_no_target", targets=())(
            type("NoTarget", (), {"mutate": lambda self, ind, ctx: None}))
    assert "test_no_mutate" not in known_operators()
    assert "test_no_target" not in known_operators()


def test_register_a_new_operator_by_name():
    @mutation("test_identity_swap", targets=("amdgpu",))
    class Identity:

        def __init__(self, *, where: int = 0):
            self.where = where

        def mutate(self, individual, context):
            return context.reject("never proposes")

    op = get_operator("test_identity_swap", where=2)
    assert op.name == "test_identity_swap" and op.kind == "mutation" and op.where == 2
    ctx = _bare_ctx()
    assert isinstance(op.mutate(None, ctx), Rejected) and ctx.reasons == ["never proposes"]


def _bare_ctx():
    return OperatorContext(k0=None, kernel="k", rng=random.Random(0), program_of=lambda i: None)


def test_default_windows_are_blocks_larger_first(k0):
    kernel, program = k0
    wins = default_windows(program, kernel)
    sizes = [e - s for _, s, e in wins]
    assert sizes == sorted(sizes, reverse=True) and all(f == kernel for f, _, _ in wins)


@pytest.mark.parametrize("name", ["nop_remove", "swap_adjacent"])
def test_basic_operators_make_real_deterministic_edits(k0, name):
    op = get_operator(name)
    edits = [op.mutate(_Ind(), _ctx(k0, seed)) for seed in range(8)]
    assert edits == [op.mutate(_Ind(), _ctx(k0, seed)) for seed in range(8)]
    edits = [e for e in edits if not isinstance(e, Rejected)]
    assert len(edits) >= 4 and all(e.operator == name for e in edits)
    kernel, program = k0
    for e in edits:
        built = build_program(apply_edits(program, (e,)))
        assert built[:4] == b"\x7fELF"


def test_nop_remove_rejects_with_a_reason_when_no_nop_is_left(k0):
    kernel, program = k0
    op = get_operator("nop_remove")
    first = op.mutate(_Ind(), _ctx(k0, 0))
    ctx = _ctx(k0, 0)
    edits = [first]
    while True:
        e = op.mutate(_Ind(edits), ctx)
        if isinstance(e, Rejected):
            break
        edits.append(e)
    assert ctx.reasons == ["no s_nop left in the kernel"]


def test_independence_heuristic():
    class I:
        def __init__(self, text):
            self.text, self.raw = text, False
    assert independent(I("v_mov_b32 v3, 0"), I("v_lshlrev_b32 v2, 2, v1"))
    assert not independent(I("v_mov_b32 v3, 0"), I("v_add_u32 v4, v3, v1"))
    assert not independent(I("s_add_u32 s9, s9, 64"), I("s_add_u32 s10, s10, 1"))   # SCC
    assert not independent(I("global_load_dword v8, v[4:5], off"),
                           I("global_store_dword v[6:7], v9, off"))
    assert not independent(I("s_waitcnt vmcnt(0)"), I("v_mov_b32 v3, 0"))
    # register ranges and implicit operands come from the shared effects model
    assert not independent(I("v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]"),
                           I("v_mov_b32 v3, 0"))                      # v3 inside v[2:3]
    assert not independent(I("v_cmp_gt_u32_e32 vcc, 64, v0"),
                           I("v_cndmask_b32_e32 v1, 0, v2, vcc"))       # VCC
    assert not independent(I("s_mov_b64 exec, s[2:3]"), I("v_mov_b32 v3, 0"))  # EXEC
    assert not independent(I("s_getpc_b64 s[0:1]"), I("v_mov_b32 v3, 0"))  # its own address
    assert independent(I("s_mov_b32 s4, 1"), I("s_mov_b32 s5, 2"))      # SCC untouched
    assert not independent(I("s_cbranch_scc1 BB0_2"), I("v_mov_b32 v3, 0"))
