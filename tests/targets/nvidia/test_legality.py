"""Move legality on hand-picked windows of real cubins, with the expected outcome written out."""
from __future__ import annotations

from dataclasses import replace

import pytest

from asmevo.targets.nvidia import edit as E
from asmevo.targets.nvidia import legality as L
from asmevo.targets.nvidia.operands import parse
from tests.targets.nvidia.conftest import needs_nvdisasm

pytestmark = needs_nvdisasm


def _at(code, text):
    return next(i for i, ins in enumerate(code.instructions) if ins.text == text)


def test_operands_hand_picked():
    o = parse("@!P5 LDG.E R6, desc[UR4][R2.64+0x80]")
    assert o.reads == {"P5", "R2", "R3", "UR4", "UR5"} and o.writes == {"R6"} and o.movable
    o = parse("IMAD.WIDE R2, R7.reuse, 0x4, R2")
    assert o.reads == {"R2", "R3", "R7"} and o.writes == {"R2", "R3"} and o.reuse == (1,)
    o = parse("ISETP.GE.AND P6, PT, R7, UR6, PT")
    assert o.reads == {"R7", "UR6"} and o.writes == {"P6"}
    o = parse("IADD3 R6, P0, P1, R4, R2, RZ")
    assert o.writes == {"R6", "P0", "P1"} and o.reads == {"R4", "R2"}
    o = parse("IADD3.X R7, R5, R7, RZ, P0, !P1")
    assert o.reads == {"R5", "R7", "P0", "P1"} and o.writes == {"R7"}
    assert parse("P2R R22, PR, RZ, 0x40").reads == {f"P{i}" for i in range(7)}
    assert parse("SHFL.BFLY PT, R11, R10, 0x10, 0x1f").writes == {"R11"}
    assert parse("STS.128 [R33+UR5], R4").reads == {"R33", "UR5", "R4", "R5", "R6", "R7"}
    assert parse("LDG.E.128 R4, desc[UR4][R2.64]").writes == {"R4", "R5", "R6", "R7"}
    assert parse("CS2R R10, SRZ").writes == {"R10", "R11"}
    assert parse("BAR.SYNC.DEFER_BLOCKING 0x0").fence
    unknown = parse("FOO.BAR R4, R8")
    assert not unknown.known and {"R4", "R7", "R8", "R11"} <= unknown.reads & unknown.writes


# tri_add: four guarded loads after the address computation (K0 indices 30..45)
def test_load_may_not_cross_the_compare_that_sets_its_guard(tri_add):
    code = tri_add.kernel("tri_add")
    i = _at(code, "@!P5 LDG.E R6, desc[UR4][R2.64+0x80]")
    assert code.instructions[i + 1].text == "ISETP.NE.AND P5, PT, R22, RZ, PT"
    with pytest.raises(E.IllegalEdit, match="register dependency on P5"):
        E.move(code, i, i + 1)


def test_load_may_not_cross_a_load_sharing_its_scoreboard(tri_add):
    code = tri_add.kernel("tri_add")
    assert code.instructions[46].text == "@!P3 LDG.E R9, desc[UR4][R2.64+0x180]"
    assert code.instructions[47].text == "@!P1 LDG.E R11, desc[UR4][R2.64+0x280]"
    assert code.instructions[46].control.wbar == code.instructions[47].control.wbar == 4
    with pytest.raises(E.IllegalEdit, match="shared scoreboard SB4"):
        E.move(code, 46, 47)


def test_legal_moves_of_a_load_are_exactly_these(tri_add):
    code = tri_add.kernel("tri_add")
    assert code.instructions[40].text == "@!P2 LDG.E R10, desc[UR4][R2.64+0x200]"
    # up to 32: at 31 it would issue 12 cycles after ISETP.GE.AND P2 (its guard; was
    # 23, needs 13); down to 45: at 46 it would cross LDG R9, which also sets SB4
    assert E.legal_moves(code, 40) == [32, 33, 34, 35, 36, 37, 38, 39, 41, 42, 43, 44, 45]
    with pytest.raises(E.IllegalEdit, match=r"12 cycles after ISETP.GE.AND P2.*needs 13"):
        E.move(code, 40, 31)
    # a load whose guard is rewritten right after it cannot move down; nor up past
    # the write of its destination R0 (IMAD.MOV.U32 R0 at 28, a WAW 3 cycles apart)
    assert E.legal_moves(code, 34) == []


def test_nothing_crosses_a_barrier_or_a_label(programs):
    code = programs["tri_softmax"].kernel("tri_softmax")
    bar = _at(code, "BAR.SYNC.DEFER_BLOCKING 0x0")
    sts = bar - 1
    assert code.instructions[sts].base == "STS"
    with pytest.raises(E.IllegalEdit, match="fence BAR"):
        E.move(code, sts, bar)
    lab = min(code.labels)
    with pytest.raises(E.IllegalEdit):
        E.move(code, lab, lab - 1)


def test_unscoreboarded_lds_keeps_its_order_with_scoreboarded_shfl(programs):
    """The rule the H200 taught: this move made decode attention's output differ."""
    code = programs["tri_decode_attention"].kernel("tri_decode_attention")
    assert code.instructions[422].text == "LDS R11, [R27+0x20]"
    assert code.instructions[422].control.wbar == 7
    with pytest.raises(E.IllegalEdit, match="completes in order"):
        E.move(code, 422, 432)


def test_stores_keep_their_order(programs):
    code = programs["tri_decode_attention"].kernel("tri_decode_attention")
    i = _at(code, "STS.128 [R33+UR5+0x10], R8")
    with pytest.raises(E.IllegalEdit, match="memory order"):
        E.move(code, i, i - 1)


def test_compensated_move_keeps_every_other_distance(tri_add):
    code = tri_add.kernel("tri_add")
    new = E.move(code, 40, 35)
    assert [i.origin for i in new.instructions[34:42]] == [34, 40, 35, 36, 37, 38, 39, 41]
    # LDG R10's stall (4) joins MOV R21's (1): instruction 41 issues exactly as before
    assert new.instructions[40].text == "MOV R21, RZ"
    assert new.instructions[40].control.stall == 1 + 4
    assert L.check(code, new) == []


def test_fixed_latency_distance_is_checked(tri_add):
    """Shortening the stall between a producer and its consumer below the need is refused."""
    code = tri_add.kernel("tri_add")
    # LOP3.LUT R0 (stall 5) feeds IMAD R7, ..., R0 right after it
    i = _at(code, "LOP3.LUT R0, R0, 0x1f, RZ, 0xc0, !PT")
    assert "R0" in code.instructions[i + 1].ops.reads
    with pytest.raises(E.IllegalEdit, match="cycles after"):
        E.retime(code, i, stall=1)
    assert E.retime(code, i, stall=7).instructions[i].control.stall == 7   # longer: fine


def test_unencodable_stall_is_refused(tri_add):
    code = tri_add.kernel("tri_add")
    assert code.instructions[0].control.yield_bit == 1
    with pytest.raises(E.IllegalEdit, match="does not encode"):
        E.retime(code, 0, stall=12)
    E.retime(code, 0, stall=12, yield_bit=0)


def test_scoreboard_fields_never_change(tri_add):
    code = tri_add.kernel("tri_add")
    bad = code.instructions[1].with_control(code.instructions[1].control.with_(wbar=3))
    new = code.with_instructions((code.instructions[0], bad) + code.instructions[2:])
    assert any("scoreboard fields" in r for r in L.check(code, new))


def test_a_waiter_issues_at_least_two_cycles_after_its_scoreboard_is_set(programs):
    """ptxas never puts a waiter 1 cycle after the setter (0 of 725 pairs in the corpus)."""
    code = programs["tri_rmsnorm"].kernel("tri_rmsnorm")
    i = _at(code, "SHFL.BFLY PT, R16, R15, 0x10, 0x1f")
    assert (i, code.instructions[i].control.stall) == (44, 2)
    assert code.instructions[45].text == "FADD R16, R15, R16"      # waits on SB0
    with pytest.raises(E.IllegalEdit, match=r"FADD R16, R15, R16 would issue 1 cycles after "
                                            r"SHFL.BFLY .*\(was 2, needs 2\)"):
        E.retime(code, 44, stall=1)
    E.retime(code, 44, stall=3)                                    # lengthening is fine


def test_results_the_next_block_reads_keep_their_distance_to_the_block_end(programs):
    """`@P0 EXIT` ends block 0; the next block stores R5, which FMUL wrote 9 cycles
    before the end (no scoreboard: fixed latency). Shortening the EXIT's stall from
    5 to 1 would leave 5 cycles."""
    code = programs["tri_rmsnorm"].kernel("tri_rmsnorm")
    assert code.instructions[93].text == "@P0 EXIT" and code.block_of(93).end == 94
    with pytest.raises(E.IllegalEdit, match=r"FMUL R5, R5, R12 would issue 5 cycles before "
                                            r"its block ends \(was 9, needs 12"):
        E.retime(code, 93, stall=1)


def test_a_block_ending_in_exit_has_no_next_block_to_protect(tri_add):
    """The last block (`STG ...; EXIT`) leads nowhere: its end imposes no distance."""
    code = tri_add.kernel("tri_add")
    assert code.instructions[79].text == "EXIT" and code.block_of(79).end == 80
    assert code.instructions[78].text.startswith("STG.E")
    assert E.retime(code, 79, stall=1).instructions[79].control.stall == 1


def test_a_store_guard_predicate_keeps_thirteen_cycles(programs):
    """Seen on the H200: `@P5 STG` moved above `ISETP P0` issued 12 cycles after
    `ISETP P5` (was 13) and 512 of 4096 outputs were never written. Predicates read
    by memory instructions or branches need 13 cycles (ptxas never leaves less)."""
    code = programs["tri_matmul_fp16"].kernel("tri_matmul_fp16")
    assert code.instructions[315].text == "ISETP.LT.AND P5, PT, R9, UR8, !P0"
    assert code.instructions[323].text == "ISETP.LT.AND P0, PT, R38, UR8, !P0"
    assert code.instructions[324].text == "@P5 STG.E desc[UR6][R20.64], R3"
    with pytest.raises(E.IllegalEdit, match=r"@P5 STG.E .* would issue 12 cycles after "
                                            r"ISETP.LT.AND P5, .*\(was 13, needs 13\)"):
        E.move(code, 324, 323)
    assert 323 not in E.legal_moves(code, 324)
    assert L._need(code.instructions[315], code.instructions[324]) == L.PREDICATE_LATENCY == 13


def test_an_alu_guard_predicate_keeps_thirteen_cycles_too(programs):
    """Seen on the H200 (soundness bench, tri_decode_attention): `FSETP P3`'s stall
    2 -> 1 let `@!P3 FMUL R14` issue 12 cycles after it (was 13) and the kernel
    computed wrong values. A guard is read late whatever the instruction: ptxas
    never leaves less than 13 cycles before any guarded reader (89 of 185 ALU ones sit
    at exactly 13); a predicate read as an ALU operand (FSEL) may follow sooner."""
    code = programs["tri_decode_attention"].kernel("tri_decode_attention")
    ins = code.instructions
    assert ins[653].text == "FSETP.GEU.AND P3, PT, R14, -126, PT"
    assert ins[659].text == "@!P3 FMUL R14, R14, 0.5"
    assert sum(i.control.stall for i in ins[653:659]) == 13
    assert L._need(ins[653], ins[659]) == L.PREDICATE_LATENCY
    with pytest.raises(E.IllegalEdit, match=r"@!P0 FMUL R11, R11, 0.5 would issue 12 cycles "
                                            r"after FSETP.GEU.AND P0, .*needs 13"):
        E.retime(code, 653, stall=1)
    operand = replace(ins[659], text="FSEL R14, R14, R15, !P3",
                      ops=parse("FSEL R14, R14, R15, !P3"))
    assert operand.ops.guard is None and "P3" in operand.ops.reads
    assert L._need(ins[653], operand) == L.FIXED_LATENCY < L.PREDICATE_LATENCY


def test_a_memory_instruction_keeps_six_cycles_after_a_barrier(programs):
    """Seen on the H200 (soundness bench): `LDS R8, [R36]` moved above `FADD R4` to 1
    cycle after `BAR.SYNC` read stale shared memory (99.7% of decode attention's
    outputs wrong at size large); with the barrier's stall raised to 6 the same move
    was bit-equal, at 3 it was not. ptxas never leaves less than 6."""
    code = programs["tri_decode_attention"].kernel("tri_decode_attention")
    ins = code.instructions
    assert ins[774].text == "BAR.SYNC.DEFER_BLOCKING 0x0" and ins[774].control.stall == 1
    assert ins[775].control.stall == 5 and ins[776].text == "LDS R8, [R36]"
    with pytest.raises(E.IllegalEdit, match=r"LDS R8, \[R36\] would issue 1 cycles after "
                                            r"BAR.SYNC.DEFER_BLOCKING 0x0 \(was 6, needs 6\)"):
        E.move(code, 776, 775)
    assert 775 not in E.legal_moves(code, 776)
    assert L._need(ins[774], ins[776]) == L.BARRIER_SETTLE == 6
    assert L._need(ins[774], ins[775]) == 0          # ALU work may follow at once


def test_a_store_without_read_scoreboard_keeps_the_later_one_that_covers_it(programs):
    """Seen on the H200 (soundness bench, CUDA_ERROR_ILLEGAL_ADDRESS at size large):
    `STS [R67+UR4] {read SB1}` moved above `@!P5 STG [R42.64]` (no read scoreboard).
    The STG's address is safe only because operands are read in order and SB1's
    release implies its read: `IMAD.WIDE R66` waits on SB1 and `PRMT R43` two
    instructions later overwrites the address. Moves to 296 and 295 (not past the
    STG) were bit-equal; 294 .. 291 faulted."""
    code = programs["tri_fused_add_rmsnorm"].kernel("tri_fused_add_rmsnorm")
    ins = code.instructions
    assert ins[297].text == "STS [R67+UR4], R58" and ins[297].control.rbar == 1
    assert ins[294].text == "@!P5 STG.E.U16 desc[UR6][R42.64], R51"
    assert ins[303].control.waits == frozenset({1}) and ins[305].text.startswith("PRMT R43,")
    with pytest.raises(E.IllegalEdit, match=r"STS's read scoreboard SB1 also covers STG's "
                                            r"earlier read of .*R43"):
        E.move(code, 297, 294)
    assert {295, 296} <= set(E.legal_moves(code, 297))
    assert not {291, 292, 293, 294} & set(E.legal_moves(code, 297))


def test_every_edit_list_the_h200_rejected_is_refused_now(programs):
    """The candidates the GPU soundness run rejected (bench_operators --dump-bad)
    no longer pass the rules."""
    import json
    from pathlib import Path

    from asmevo.edits import Edit
    from asmevo.targets.nvidia import NvidiaTarget

    bad = json.loads((Path(__file__).parents[3] / "experiments" / "nvidia" / "results" /
                      "2026-11-29c" / "soundness_call2_bad.json").read_text())
    assert len(bad) == 2
    t = NvidiaTarget()
    for entry in bad:
        with pytest.raises(E.IllegalEdit):
            t.apply_edits(programs[entry["kernel"]], tuple(Edit.from_json(e) for e in entry["edits"]))


def test_a_shorter_stall_is_checked_against_every_later_read_of_the_block_start(programs):
    """Found by the soundness bench: shortening IMAD.MOV.U32 R20's stall (246) moves
    IMAD.MOV.U32 R21 (247, which reads R27 from before its block) one cycle
    earlier; the step's own check must see that, not only the static gate."""
    code = programs["tri_matmul_fp16"].kernel("tri_matmul_fp16")
    assert code.instructions[246].text == "IMAD.MOV.U32 R20, RZ, RZ, R25"
    assert code.instructions[247].text == "IMAD.MOV.U32 R21, RZ, RZ, R27"
    assert code.block_of(246).start == 230
    with pytest.raises(E.IllegalEdit, match=r"IMAD.MOV.U32 R21, RZ, RZ, R27 would issue \d+ "
                                            r"cycles after its block starts"):
        E.retime(code, 246, stall=1)


def test_a_late_reader_never_passes_the_read_scoreboard_that_covers_it(programs):
    """Seen on the H200 (tri_layernorm, large size): `LDG R10 [R4]` carries the read
    scoreboard R0 for every load of R4 before it (operands are read in order), and
    `HFMA2.MMA R4` waits on it. Moved above `LDG R9 [R4]`, it no longer covers R9's
    read: R4 was overwritten first and 2% of one output column went wrong."""
    code = programs["tri_layernorm"].kernel("tri_layernorm")
    assert code.instructions[94].text == "@!P1 LDG.E R9, desc[UR6][R4.64+0x200]"
    assert code.instructions[97].text == "@!P0 LDG.E R10, desc[UR6][R4.64+0x300]"
    assert code.instructions[97].control.rbar == 0 and code.instructions[94].control.rbar == 7
    assert code.instructions[101].text.startswith("HFMA2.MMA R4")
    with pytest.raises(E.IllegalEdit, match=r"may not cross @!P1 LDG.E R9, .*: LDG's read "
                                            r"scoreboard SB0 also covers LDG's earlier read "
                                            r"of P1,R4,R5"):
        E.move(code, 97, 93)
    # nor above LDG R11 / LDG R18: the rule is kernel-wide (R2 is rewritten after the
    # wait on SB0 too; that LDG R21's SB1 also covers them is not modelled)
    assert E.legal_moves(code, 97) == []
