"""Spliced rebuilds (asmevo.targets.amdgpu.splice) equal llvm-mc + ld.lld byte for byte."""
import random

import pytest

from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu import splice
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from tests.conftest import KERNELS


@pytest.fixture
def counted(monkeypatch):
    hits = []
    real = splice.spliced

    def wrapper(*a, **k):
        out = real(*a, **k)
        hits.append(out is not None)
        return out
    monkeypatch.setattr(splice, "spliced", wrapper)
    return hits


@pytest.mark.parametrize("name,co", [("softmax", "softmax.gfx942.co"),
                                     ("matmul_tiled", "matmul_tiled.gfx90a.co"),
                                     ("tri_rotary", "tri_rotary.gfx942.co")])
def test_spliced_equals_tool_build(toolchain, counted, name, co, tmp_path, monkeypatch):
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    k0 = load(KERNELS / name / co)
    program = recover(k0)
    kernel = k0.kernels[0].name
    ins = program.function(kernel).instructions
    rng = random.Random(7)
    edits = [Edit(kernel, i, i + 2, (ins[i + 1].text, ins[i].text))
             for i in rng.sample(range(len(ins) - 1), 5)]
    edits += [Edit(kernel, i, i + 1, (ins[rng.randrange(len(ins))].text,))
              for i in rng.sample(range(len(ins)), 5)]
    compared = 0
    for e in edits:
        cand = apply_edits(program, (e,))
        fast = build_program(cand)
        assert fast == build_program(cand, cache=False)
        compared += 1
    assert compared == len(edits) and sum(counted) >= 6


def test_moved_label_or_new_text_is_not_spliced(toolchain, counted, tmp_path, monkeypatch):
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    k0 = load(KERNELS / "vector_add" / "vector_ops.gfx942.co")
    program = recover(k0)
    ins = program.function("vector_add").instructions
    i = next(j for j, x in enumerate(ins) if x.mnemonic == "v_add_f32_e32")
    new = apply_edits(program, (Edit("vector_add", i, i + 1,
                                     ("v_sub_f32_e32 " + ins[i].operands,)),))
    assert build_program(new) == build_program(new, cache=False)
    # one instruction more: every later address moves
    longer = apply_edits(program, (Edit("vector_add", i, i + 1, (ins[i].text, "s_nop 0")),))
    assert build_program(longer) == build_program(longer, cache=False)
    assert counted == [False, False]
