"""The PTX route: ptxas variants keep the ABI; the default options reproduce Triton's cubin."""
from __future__ import annotations

import pytest

from asmevo.targets.nvidia.abi import abi_diff
from asmevo.targets.nvidia.cubin import CubinError, load
from asmevo.targets.nvidia.ptx import VARIANTS, PtxOptions, compile_ptx, rebuild
from tests.nvidia.conftest import CUBINS, needs_ptxas

pytestmark = needs_ptxas
BY_NAME = {p.parent.name: p for p in CUBINS}


@pytest.mark.parametrize("name", ["tri_softmax", "tri_rmsnorm", "tri_matmul_fp16"])
def test_default_rebuild_is_byte_identical(name):
    k0 = load(BY_NAME[name])
    assert rebuild(k0, BY_NAME[name].with_suffix(".ptx").read_text()) == k0.data


@pytest.mark.parametrize("name", ["tri_add", "tri_layernorm"])
def test_every_variant_keeps_the_abi(name):
    k0 = load(BY_NAME[name])
    ptx = BY_NAME[name].with_suffix(".ptx").read_text()
    regs = set()
    for v in VARIANTS:
        k1 = load(rebuild(k0, ptx, v))
        assert abi_diff(k0, k1) == []
        regs.add(k1.kernels[0].regcount)
    assert len(regs) > 1          # -O0 allocates differently


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
