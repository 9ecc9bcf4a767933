"""Edits written into the cubin bytes: no-op identity, moves, retiming, window edits."""
from __future__ import annotations

import pytest

from asmevo.edits import Edit
from asmevo.operator import Rejected
from asmevo.targets.nvidia import NvidiaTarget
from asmevo.targets.nvidia import edit as E
from asmevo.targets.nvidia.abi import abi_diff
from asmevo.targets.nvidia.cubin import WORD_BYTES, load
from asmevo.targets.nvidia.program import recover
from tests.targets.nvidia.conftest import CUBINS, needs_nvdisasm

pytestmark = needs_nvdisasm


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.parent.name)
def test_noop_edit_reproduces_the_cubin(path, programs):
    prog = programs[path.parent.name]
    assert E.build(prog) == path.read_bytes()
    empty = E.to_edit(prog, prog, prog.kernels[0].name)
    t = NvidiaTarget()
    assert t.build(prog, t.apply(prog, (empty,))) == path.read_bytes()


def test_move_changes_only_the_window_and_offset_lists(programs):
    prog = programs["tri_softmax"]
    code = prog.kernels[0]
    i = next(i for i, ins in enumerate(code.instructions)
             if ins.ops.movable and E.legal_moves(code, i))
    to = E.legal_moves(code, i)[0]
    new = prog.with_kernel(E.move(code, i, to))
    data = E.build(new)
    k0 = prog.source.data
    k = code.kernel
    lo = k.file_offset + min(i, to) * WORD_BYTES
    hi = k.file_offset + (max(i, to) + 1) * WORD_BYTES
    info = {p for _n, pos, _v in k.offset_lists for p in pos}
    diff = [b for b in range(len(k0)) if k0[b] != data[b]]
    assert diff and all(lo <= b < hi or any(p <= b < p + 4 for p in info) for b in diff)
    assert abi_diff(load(k0), load(data)) == []
    # recovering the edited cubin shows the same instructions in the new order
    again = recover(load(data)).kernels[0]
    assert [x.clean_text for x in again.instructions] == \
        [x.clean_text for x in new.kernels[0].instructions]


def test_window_edit_roundtrips_through_its_printable_form(programs):
    prog = programs["tri_add"]
    code = prog.kernel("tri_add")
    moved = prog.with_kernel(E.move(code, 40, 35))
    edit = E.to_edit(prog, moved, "tri_add", operator="move")
    assert (edit.start, edit.end) == (35, 41)
    assert edit.lines[0] == "[B------:R-:W4:-:S04] @!P2 LDG.E R10, desc[UR4][R2.64+0x200]"
    again = Edit.from_json(edit.to_json())
    assert E.build(E.apply_edit(prog, again)) == E.build(moved)


def test_window_edit_refuses_foreign_or_illegal_lines(programs):
    prog = programs["tri_add"]
    code = prog.kernel("tri_add")
    lines = [ins.line for ins in code.instructions[40:42]]
    with pytest.raises(E.IllegalEdit, match="not one of the window"):
        E.apply_edit(prog, Edit("tri_add", 40, 42, (lines[0], "[B------:R-:W-:-:S01] EXIT")))
    with pytest.raises(E.IllegalEdit, match="only reordering"):
        E.apply_edit(prog, Edit("tri_add", 40, 42, (lines[0],)))
    with pytest.raises(E.IllegalEdit, match="register dependency"):   # 42 rewrites P5
        E.apply_edit(prog, Edit("tri_add", 41, 43,
                                tuple(ins.line for ins in code.instructions[41:43])[::-1]))


def test_reuse_flags_are_cleared_where_the_successor_changes(programs):
    prog = programs["tri_add"]
    code = prog.kernel("tri_add")
    # VIADD R0, R7.reuse, 0x60 at 23 caches R7 for its successor P2R (24)
    with_reuse = [n for n, ins in enumerate(code.instructions) if ins.control.reuse]
    assert with_reuse
    # LDC.64 R2 moves down among the VIADD/ISETP .reuse run (not to 14: IMAD.WIDE at 15
    # waits on its scoreboard and would issue 1 cycle after it; it needs 2)
    new = E.move(code, 2, 13)
    for n, ins in enumerate(new.instructions[:-1]):
        old_n = next(k for k, x in enumerate(code.instructions) if x.origin == ins.origin)
        succ_changed = (old_n + 1 >= len(code.instructions)
                        or code.instructions[old_n + 1].origin != new.instructions[n + 1].origin)
        if succ_changed and ins.ops.reuse:
            assert ins.control.reuse == 0, ins.text
    E.build(prog.with_kernel(new))    # re-disassembles every changed word


@pytest.mark.parametrize("name", ["tri_topk_gating", "tri_decode_attention"])
def test_offset_lists_follow_moved_instructions(programs, name):
    """EIATTR_COOP_GROUP_INSTR_OFFSETS names SHFLs; a move that shifts one rewrites it."""
    prog = programs[name]
    code = prog.kernels[0]
    k = code.kernel
    lname, _pos, values = next(x for x in k.offset_lists if x[0] != "EIATTR_EXIT_INSTR_OFFSETS")
    listed = {v // WORD_BYTES for v in values}
    for i, ins in enumerate(code.instructions):
        if not ins.ops.movable:
            continue
        for to in E.legal_moves(code, i, max_distance=8):
            if any(min(i, to) <= n <= max(i, to) for n in listed):
                new = prog.with_kernel(E.move(code, i, to))
                k1 = load(E.build(new)).kernels[0]
                got = {n: v for n, _p, v in k1.offset_lists}[lname]
                want = sorted(n * WORD_BYTES for n, x in enumerate(new.kernels[0].instructions)
                              if x.origin in listed)
                assert list(got) == want and list(got) != sorted(values)
                return
    pytest.fail(f"no legal move in {name} shifts an instruction {lname} lists")


def test_mutations_propose_replayable_legal_edits(programs):
    import random
    from types import SimpleNamespace

    from asmevo.operators.rules.sass import SassMove, SassRetime
    prog = programs["tri_layernorm"]
    for op in (SassMove(), SassRetime()):
        ctx = SimpleNamespace(program=lambda ind: prog, kernel="tri_layernorm",
                              rng=random.Random(3), reject=Rejected)
        edit = op.mutate(None, ctx)
        assert isinstance(edit, Edit) and edit.operator == op.name
        t = NvidiaTarget()
        data = t.build(prog, t.apply(prog, (edit,)))
        assert data != prog.source.data and abi_diff(prog.source, load(data)) == []


def test_build_rereads_changed_words_and_refuses_a_word_that_reads_differently(programs):
    """The build's last line of defence: a word whose bits outside the control field
    changed (no edit does that; here it is forced) is refused by its disassembly."""
    prog = programs["tri_rmsnorm"]
    code = prog.kernel("tri_rmsnorm")
    i = next(n for n, x in enumerate(code.instructions) if x.text == "FADD R16, R15, R16")
    ins = code.instructions[i]
    forced = ins.with_control(ins.control)
    object.__setattr__(forced, "word", ins.word ^ (1 << 32))     # an operand bit
    seq = list(code.instructions)
    seq[i] = forced
    with pytest.raises(E.IllegalEdit, match=r"disassembles as .*expected 'FADD R16, R15, R16'"):
        E.build(prog.with_kernel(code.with_instructions(seq)))


def test_a_retimed_branch_reads_alike_at_its_own_address(programs):
    """`BRA` prints a PC-relative target: its re-timed word is compared with K0's at
    the same address, so a stall change is not mistaken for a different branch."""
    prog = programs["tri_rmsnorm"]
    code = prog.kernel("tri_rmsnorm")
    assert code.instructions[96].text.startswith("BRA ")
    new = prog.with_kernel(E.retime(code, 96, stall=2))
    assert load(E.build(new)).kernels[0].words[96] != code.kernel.words[96]
