"""Replayed disassembly (asmevo.targets.amdgpu.sweep) is llvm-objdump's, line for line."""
import pytest

from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu import disasm
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.targets.amdgpu.patch import Patch, patch
from asmevo.targets.amdgpu.registers import register_ranges
from asmevo.targets.amdgpu.sweep import Memo
from tests.conftest import KERNELS


def _independent_pairs(ins):
    out = []
    for i in range(len(ins) - 1):
        a, b = ins[i], ins[i + 1]
        if a.mnemonic.startswith(("s_cbranch", "s_branch")) or \
                b.mnemonic.startswith(("s_cbranch", "s_branch")):
            continue
        ra = {(r.kind, n) for r in register_ranges(a.operands) for n in r}
        rb = {(r.kind, n) for r in register_ranges(b.operands) for n in r}
        if not ra & rb and a.encoding != b.encoding:
            out.append(i)
    return out


@pytest.mark.parametrize("name,co", [("softmax", "softmax.gfx942.co"),
                                     ("softmax", "softmax.gfx90a.co"),
                                     ("matmul_tiled", "matmul_tiled.gfx942.co")])
def test_replay_equals_objdump_on_swapped_candidates(toolchain, name, co):
    k0 = load(KERNELS / name / co)
    program = recover(k0)
    memo = Memo()
    memo.learn(k0.data, disasm._objdump(toolchain, k0.data, k0.target, path=None))
    ins = program.function(name).instructions
    replayed = 0
    for i in _independent_pairs(ins)[:6]:
        data = build_program(apply_edits(program, (Edit(name, i, i + 2, (ins[i + 1].text,
                                                                         ins[i].text)),)))
        real = disasm._objdump(toolchain, data, k0.target, path=None)
        got = memo.replay(data, disasm.RawLine)
        if got is not None:
            replayed += 1
            assert got == real
        memo.learn(data, real)
    assert replayed >= 5


def test_unseen_encoding_is_not_replayed(toolchain):
    k0 = load(KERNELS / "vector_add" / "vector_ops.gfx942.co")
    program = recover(k0)
    memo = Memo()
    memo.learn(k0.data, disasm._objdump(toolchain, k0.data, k0.target, path=None))
    ins = program.function("vector_add").instructions
    i = next(j for j, x in enumerate(ins) if x.mnemonic == "v_add_f32_e32")
    out = patch(program, Patch("vector_add", i, i + 1, ("v_sub_f32_e32 " + ins[i].operands,)))
    assert memo.replay(out, disasm.RawLine) is None      # v_sub_f32 never printed before
    real = disasm._objdump(toolchain, out, k0.target, path=None)
    memo.learn(out, real)
    assert memo.replay(out, disasm.RawLine) == real


def test_an_encoding_printed_two_ways_is_never_replayed(toolchain):
    k0 = load(KERNELS / "vector_add" / "vector_ops.gfx942.co")
    lines = disasm._objdump(toolchain, k0.data, k0.target, path=None)
    memo = Memo()
    memo.learn(k0.data, lines)
    odd = [disasm.RawLine(ln.address, ln.text + " ", ln.encoding) for ln in lines]
    memo.learn(k0.data, odd)
    program = recover(k0)
    ins = program.function("vector_add").instructions
    i = _independent_pairs(ins)[0]
    data = patch(program, Patch("vector_add", i, i + 2, (ins[i + 1].text, ins[i].text)))
    assert memo.replay(data, disasm.RawLine) is None
