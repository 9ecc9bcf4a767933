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


def _matmul():
    k0 = load(KERNELS / "matmul_tiled" / "matmul_tiled.gfx942.co")
    program = recover(k0)
    kernel = k0.kernels[0].name
    return program, kernel, program.function(kernel).instructions


def test_a_tool_build_teaches_its_layout(toolchain, counted, tmp_path, monkeypatch):
    """An s_nop K0 lacks, inserted: every later address moves, so the tools build it and
    the build teaches its layout and the s_nop's encoding; the same padding with other
    instructions swapped around it, and that s_nop elsewhere in place of a same-size
    K0 instruction, are then spliced, byte for byte the tools' objects."""
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    program, kernel, ins = _matmul()
    assert not any(i.text == "s_nop 5" for i in ins)
    movable = [j for j, i in enumerate(ins) if not i.is_branch and len(i.encoding) == 4
               and i.mnemonic != "s_nop"]
    at = movable[len(movable) // 3]
    padded = apply_edits(program, (Edit(kernel, at, at + 1, (ins[at].text, "s_nop 5")),))
    built = [(padded, build_program(padded))]
    pins = padded.function(kernel).instructions
    for j in [j for j in range(at + 3, len(pins) - 1)
              if not pins[j].is_branch and not pins[j + 1].is_branch
              and pins[j].mnemonic != "s_nop"
              and len(pins[j].encoding or b"1234") == len(pins[j + 1].encoding or b"1234")
              and pins[j].text != pins[j + 1].text][:4]:
        cand = apply_edits(padded, (Edit(kernel, j, j + 2, (pins[j + 1].text, pins[j].text)),))
        built.append((cand, build_program(cand)))
    other = movable[2 * len(movable) // 3]
    moved = apply_edits(program, (Edit(kernel, other, other + 1, ("s_nop 5",)),))
    built.append((moved, build_program(moved)))
    for cand, fast in built:
        assert fast == build_program(cand, cache=False)
    assert counted[0] is False and all(counted[1:]) and len(counted) == len(built) >= 4


def test_a_build_that_is_not_its_layout_teaches_nothing(toolchain, counted, tmp_path,
                                                        monkeypatch):
    """learn() reads the build: a build whose instructions are not where the layout puts
    them (here K0's own rebuild offered for a padded program) is not kept, and the
    padded program then still builds with the tools."""
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    program, kernel, ins = _matmul()
    build_program(apply_edits(program, (Edit(kernel, 1, 3, (ins[2].text, ins[1].text)),)))
    base = next(iter(splice._BASES.values()))
    at = len(ins) // 2
    padded = apply_edits(program, (Edit(kernel, at, at + 1, (ins[at].text, "s_nop 6")),))
    from asmevo.targets.amdgpu.assembly import to_asm, with_register_counts
    asm = to_asm(with_register_counts(padded))
    k0_build = next(iter(base.layouts.values())).data
    n = len(base.layouts)
    splice.learn(padded, asm, k0_build, next(iter(splice._BASES))[1:])
    assert len(base.layouts) == n and "s_nop 6" not in base.encoding
    assert build_program(padded) == build_program(padded, cache=False)
    assert counted[-1] is False


def _runs(program, kernel):
    """The kernel's runs of position-independent instructions (between labels and
    branches), as lists of instruction indices."""
    from asmevo.targets.amdgpu.program import Label
    runs, cur, j = [], [], 0
    for it in program.function(kernel).items:
        if isinstance(it, Label) or it.is_branch:
            runs.append(cur)
            cur = []
        if not isinstance(it, Label):
            if not it.is_branch:
                cur.append(j)
            j += 1
    return [r for r in runs + [cur] if len(r) >= 4]


def test_padding_moved_within_a_run_keeps_the_layout(toolchain, counted, tmp_path,
                                                     monkeypatch):
    """A layout fixes where labels and branches are, not the order of what lies between
    them: the same s_nop one place further in a run of plain instructions is spliced
    into the first padded program's tool build; moved into another run (a branch or a
    label between the two places, which then move) it is built by the tools. Each is
    byte for byte the tools' object."""
    from asmevo.memo import Memo
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    # no layout an earlier test taught
    monkeypatch.setattr(splice, "_BASES", Memo(None, splice.MAX_BASES, evict="oldest"))
    program, kernel, ins = _matmul()
    runs = _runs(program, kernel)
    assert len(runs) >= 2
    first, later = runs[0], runs[-1]

    def padded(at):
        return apply_edits(program, (Edit(kernel, at, at + 1, (ins[at].text, "s_nop 4")),))
    cands = [padded(first[1]), padded(first[-2]), padded(later[1])]
    for cand in cands:
        assert build_program(cand) == build_program(cand, cache=False)
    assert counted == [False, True, False]
