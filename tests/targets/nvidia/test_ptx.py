"""The PTX route: ptxas variants keep the ABI; the default options reproduce Triton's cubin."""
from __future__ import annotations

import pytest

from asmevo.edits import Edit
from asmevo.operator import Rejected
from asmevo.targets.nvidia.abi import abi_diff
from asmevo.targets.nvidia.cubin import CubinError, load
from asmevo.targets.nvidia.ptx import VARIANTS, PtxOptions, arithmetic, compile_ptx, rebuild
from tests.targets.nvidia.conftest import CUBINS, needs_ptxas

BY_NAME = {p.parent.name: p for p in CUBINS}


@needs_ptxas
@pytest.mark.parametrize("name", ["tri_softmax", "tri_rmsnorm", "tri_matmul_fp16"])
def test_default_rebuild_is_byte_identical(name):
    k0 = load(BY_NAME[name])
    assert rebuild(k0, BY_NAME[name].with_suffix(".ptx").read_text()) == k0.data


@needs_ptxas
@pytest.mark.parametrize("name", ["tri_add", "tri_layernorm"])
def test_every_variant_keeps_the_abi(name):
    k0 = load(BY_NAME[name])
    ptx = BY_NAME[name].with_suffix(".ptx").read_text()
    codes = set()
    for v in VARIANTS:
        k1 = load(rebuild(k0, ptx, v))
        assert abi_diff(k0, k1) == []
        codes.add(k1.data)
    assert len(codes) > 1         # another schedule or allocation, same ABI and arithmetic


@needs_ptxas
def test_a_rebuild_that_changes_the_arithmetic_is_refused():
    """Seen on the H200: tri_layernorm's PTX under -O0 was not bit-equal to K0.
    ptxas does not contract multiplies and adds there (FFMA -5, FMUL +5, FADD +8):
    the rebuild is refused before any launch, and -O0 is not a variant."""
    k0 = load(BY_NAME["tri_layernorm"])
    ptx = BY_NAME["tri_layernorm"].with_suffix(".ptx").read_text()
    with pytest.raises(CubinError, match=r"changes the floating-point arithmetic \(FADD \+8, "
                                         r"FFMA -5, FMUL \+5\)"):
        rebuild(k0, ptx, PtxOptions(opt_level=0))
    assert PtxOptions(opt_level=0) not in VARIANTS
    assert arithmetic(k0) == arithmetic(load(rebuild(k0, ptx, PtxOptions(opt_level=1))))


@needs_ptxas
def test_abi_change_is_refused():
    k0 = load(BY_NAME["tri_add"])
    other = BY_NAME["tri_softmax"].with_suffix(".ptx").read_text()
    with pytest.raises(CubinError, match="changes the ABI"):
        rebuild(k0, other)
    assert compile_ptx(other)[:4] == b"\x7fELF"


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        PtxOptions(opt_level=5)
    with pytest.raises(ValueError):
        PtxOptions(maxrregcount=8)


@needs_ptxas
def test_ptx_rebuild_is_an_edit_the_target_applies_first_only(programs):
    """The PTX route as an operator: a replayable edit (variant in its descriptor
    pairs), applied by the target, ABI-gated; SASS moves may follow it and are
    checked against the rebuilt cubin; a second rebuild or one after other edits
    is refused."""
    import random

    from asmevo.edits import Edit
    from asmevo.targets.nvidia import NvidiaTarget
    from asmevo.targets.nvidia.edit import IllegalEdit, legal_moves
    from asmevo.operators.rules.sass import PtxRebuild
    from asmevo.verify.pipeline import candidate
    from asmevo.targets.nvidia.ptx import options_of, ptx_edit
    from asmevo.operator import OperatorContext, get_operator

    t = NvidiaTarget()
    k0 = load(BY_NAME["tri_add"].read_bytes(), path=str(BY_NAME["tri_add"]))
    prog = t.recover(k0)
    e = ptx_edit("tri_add", PtxOptions(opt_level=1))
    assert Edit.from_json(e.to_json()) == e and options_of(e) == PtxOptions(opt_level=1)
    assert e.note == "ptxas -O1"
    new, data, verdict = candidate(t, prog, (e,), k0)
    assert verdict is None and data != k0.data and abi_diff(k0, load(data)) == []
    assert data == rebuild(k0, BY_NAME["tri_add"].with_suffix(".ptx").read_text(),
                           PtxOptions(opt_level=1))
    # a legal move on the rebuilt program, gated against the rebuilt cubin
    code = new.kernel("tri_add")
    i = next(i for i, x in enumerate(code.instructions) if x.ops.movable and legal_moves(code, i))
    from asmevo.targets.nvidia.edit import move, to_edit
    mv = to_edit(new, new.with_kernel(move(code, i, legal_moves(code, i)[0])), "tri_add")
    _, data2, verdict2 = candidate(t, prog, (e, mv), k0)
    assert verdict2 is None and data2 not in (data, k0.data)
    with pytest.raises(IllegalEdit, match="only be an individual's first edit"):
        t.apply_edits(prog, (e, ptx_edit("tri_add", PtxOptions(opt_level=2))))
    with pytest.raises(IllegalEdit, match="only be an individual's first edit"):
        t.apply_edits(t.apply_edits(prog, (e,)), (ptx_edit("tri_add", PtxOptions(opt_level=2)),))
    # the operator: from K0 only
    op = get_operator("ptx_rebuild")
    assert isinstance(op, PtxRebuild) and op.targets == ("nvidia",)

    class Ind:
        def __init__(self, edits=()):
            self.edits = edits
    ctx = OperatorContext(k0=prog, kernel="tri_add", rng=random.Random(3),
                          program_of=lambda ind: prog)
    proposed = op.mutate(Ind(), ctx)
    assert isinstance(proposed, Edit) and proposed.operator == "ptx_rebuild"
    assert isinstance(op.mutate(Ind((e,)), ctx), Rejected) and "starts from K0" in ctx.reasons[-1]
