"""pad_hazards judges a rewrite as the static gate does: against K0's own hazards.

aiter_i8gemm ships ``s_add_u32 m0, ...`` directly before ``buffer_load_dword ... lds``
(LLVM's salu-m0 rule wants one wait state): 26 such hazards in K0. A rewrite elsewhere
must not be refused for them, and a hazard the rewrite adds is still padded."""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis.hazards import check_hazards
from asmevo.targets.amdgpu.program import Instruction
from asmevo.operators.rules.common import pad_hazards
from tests.operators.rules.helpers import kernel


def _first_k0_hazard():
    name, program = kernel("aiter_i8gemm")
    fn = program.function(name)
    p = check_hazards(fn, program.source.target)[0]
    assert (p.rule, p.required, p.actual) == ("salu-m0", 1, 0)
    return name, program, fn, p


def test_a_window_after_a_k0_hazard_needs_no_padding_for_it():
    name, program, fn, p = _first_k0_hazard()
    i = p.index + 2
    lines = [x.text for x in fn.instructions[i:i + 3]]
    assert pad_hazards(program, name, i, i + 3, lines) == lines


def test_a_hazard_the_rewrite_adds_is_padded():
    name, program, fn, p = _first_k0_hazard()
    i = p.index + 2
    dma = fn.instructions[i].text
    assert dma.endswith(" lds")
    got = pad_hazards(program, name, i, i + 1, ["s_mov_b32 m0, s50", dma])
    assert got == ["s_mov_b32 m0, s50", "s_nop 0", dma]


def test_two_programs_with_one_function_name_are_padded_each_for_its_own_code():
    """pad_hazards remembers answers per program object: the same request on a program
    whose code differs past the window gets that program's answer, and asking the first
    program again still gets the first answer."""
    name, program, fn, p = _first_k0_hazard()
    i = p.index + 2
    assert fn.instructions[i].text.endswith(" lds")         # reads M0
    other = program.replace_window(name, i, i + 1, [Instruction("s_nop 0")])
    m0 = [fn.instructions[i - 1].text, "s_mov_b32 m0, s50"]
    before = pad_hazards(program, name, i - 1, i, m0)
    assert before == m0 + ["s_nop 0"]                       # the DMA after the window
    assert pad_hazards(other, name, i - 1, i, m0) == m0     # nothing after it reads M0
    assert pad_hazards(program, name, i - 1, i, m0) == before
