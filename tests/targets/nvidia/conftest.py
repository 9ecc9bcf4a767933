"""Fixtures for the sm_90 target: the committed corpus cubins and the NVIDIA tools."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CUBINS = sorted((ROOT / "experiments" / "kernels").glob("*/*.sm_90.cubin"))
SPECS = sorted((ROOT / "experiments" / "nvidia" / "specs").glob("*.toml"))


def _have(tool: str) -> bool:
    from asmevo.targets.nvidia import tools
    try:
        tools.find(tool)
        return True
    except tools.ToolError:
        return False


needs_nvdisasm = pytest.mark.skipif(not _have("nvdisasm"),
                                    reason="nvdisasm not found (install triton or set "
                                           "ASMEVO_CUDA_BIN)")
def _ptxas_for_corpus() -> str | None:
    """Why no ptxas can compile the corpus PTX (the newest .version of them), or None."""
    from asmevo.targets.nvidia import tools
    ptx = max((p.read_text() for p in ROOT.glob("experiments/kernels/*/*.sm_90.ptx")),
              key=tools.ptx_version, default=None)
    if ptx is None:
        return "no corpus PTX"
    try:
        tools.ptxas_for(ptx)
        return None
    except tools.ToolError as exc:
        return exc.message


_NO_PTXAS = _ptxas_for_corpus()
needs_ptxas = pytest.mark.skipif(_NO_PTXAS is not None, reason=str(_NO_PTXAS))


@pytest.fixture(scope="session")
def programs():
    """name -> recovered Program, for every corpus cubin (disassembled once)."""
    if not _have("nvdisasm"):
        pytest.skip("nvdisasm not found (install triton or set ASMEVO_CUDA_BIN)")
    from asmevo.targets.nvidia.cubin import load
    from asmevo.targets.nvidia.program import recover
    return {p.parent.name: recover(load(p)) for p in CUBINS}


@pytest.fixture(scope="session")
def tri_add(programs):
    return programs["tri_add"]
