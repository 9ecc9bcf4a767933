"""Fixtures for the sm_90 target: the committed corpus cubins and the NVIDIA tools."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
needs_ptxas = pytest.mark.skipif(not (_have("ptxas-blackwell") or _have("ptxas")),
                                 reason="ptxas not found (install triton or set ASMEVO_CUDA_BIN)")


@pytest.fixture(scope="session")
def programs():
    """name -> recovered Program, for every corpus cubin (disassembled once)."""
    from asmevo.targets.nvidia.cubin import load
    from asmevo.targets.nvidia.program import recover
    return {p.parent.name: recover(load(p)) for p in CUBINS}


@pytest.fixture(scope="session")
def tri_add(programs):
    return programs["tri_add"]
