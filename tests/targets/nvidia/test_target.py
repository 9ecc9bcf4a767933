"""The nvidia Target's state is its own, and a missing tool is an error, never a verdict."""
from __future__ import annotations

import pytest

from tests.targets.nvidia.conftest import _NO_PTXAS, ROOT, needs_nvdisasm, needs_ptxas

TRI_ADD = ROOT / "experiments" / "kernels" / "tri_add" / "tri_add.sm_90.cubin"


@pytest.mark.skipif(_NO_PTXAS is None, reason="a ptxas that accepts the corpus PTX is here")
def test_no_usable_ptxas_stops_the_stage_instead_of_refusing_the_candidate():
    from asmevo.targets.nvidia import NvidiaTarget
    from asmevo.targets.nvidia.cubin import load
    from asmevo.targets.nvidia.program import Program
    from asmevo.targets.nvidia.ptx import PtxOptions, ptx_edit
    from asmevo.targets.nvidia.tools import ToolMissing

    k0 = load(TRI_ADD)
    program = Program(k0, ())      # a PTX rebuild needs no disassembly of K0 first
    with pytest.raises(ToolMissing, match="ptxas"):
        NvidiaTarget().apply(program, (ptx_edit("tri_add", PtxOptions(opt_level=1)),))


@needs_nvdisasm
@needs_ptxas
def test_what_a_target_rebuilt_from_ptx_is_its_own_state():
    from asmevo.targets.nvidia import NvidiaTarget
    from asmevo.targets.nvidia.edit import IllegalEdit
    from asmevo.targets.nvidia.ptx import PtxOptions, ptx_edit

    t = NvidiaTarget()
    k0 = t.load(TRI_ADD.read_bytes(), path=str(TRI_ADD))
    prog = t.recover(k0)
    rebuilt = t.apply_edits(prog, (ptx_edit("tri_add", PtxOptions(opt_level=1)),))
    with pytest.raises(IllegalEdit, match="first edit"):
        t.apply_edits(rebuilt, (ptx_edit("tri_add", PtxOptions(opt_level=2)),))
    fresh = NvidiaTarget()
    assert fresh._from_ptx == set() and fresh._ptx == {} and t._from_ptx
