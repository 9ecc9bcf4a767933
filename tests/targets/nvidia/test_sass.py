"""SASS text aligned with the bytes, and the control-field layout checked on real cubins."""
from __future__ import annotations

import pytest

from asmevo.targets.nvidia.sass import NO_BAR, Control, parse_listing
from tests.targets.nvidia.conftest import needs_nvdisasm

pytestmark = needs_nvdisasm

# tri_add's first words, as nvdisasm -hex prints them (low half, high half)
LDC_R1 = 0x00000A00FF017B82 | 0x000FE20000000800 << 64       # LDC R1, c[0x0][0x28]
S2R_R0 = 0x0000000000007919 | 0x000E2E0000002100 << 64       # S2R R0, SR_TID.X
LOP3 = 0x0000001F00007812 | 0x001FCA00078EC0FF << 64         # LOP3.LUT R0, R0, 0x1f, ...
VIADD_REUSE = 0x0000004007067836 | 0x040FE20000000000 << 64  # VIADD R6, R7.reuse, 0x40


def test_control_decode_hand_picked():
    assert Control.decode(LDC_R1) == Control(stall=1, yield_bit=1, wbar=NO_BAR, rbar=NO_BAR,
                                             wait=0, reuse=0)
    assert Control.decode(S2R_R0) == Control(7, 1, 0, NO_BAR, 0, 0)     # sets SB0
    assert Control.decode(LOP3) == Control(5, 0, NO_BAR, NO_BAR, 0b000001, 0)  # waits SB0
    assert Control.decode(VIADD_REUSE).reuse == 0b0001                  # slot a
    assert str(Control.decode(S2R_R0)) == "[B------:R-:W0:-:S07]"
    assert str(Control.decode(LOP3)) == "[B0-----:R-:W-:Y:S05]"


def test_control_encode_roundtrip_and_isolation():
    for w in (LDC_R1, S2R_R0, LOP3, VIADD_REUSE):
        c = Control.decode(w)
        assert c.encode(w) == w
        assert Control.parse(str(c), reuse=c.reuse) == c
        changed = c.with_(stall=15, yield_bit=0).encode(w)
        assert changed ^ w == ((15 ^ c.stall) | (c.yield_bit << 4)) << 105
    with pytest.raises(ValueError):
        Control(16, 0, 7, 7, 0, 0).encode(0)
    with pytest.raises(ValueError):
        Control.parse("[B1-----:R-:W-:Y:S01]")     # position 0 must say 0
    with pytest.raises(ValueError):
        Control.parse("[B------:R-:W-:Y:S16]")


def test_every_scoreboarded_result_is_waited_for(programs):
    """The layout's evidence: a write scoreboard's first reader waits on its bit."""
    checked = 0
    for prog in programs.values():
        for code in prog.kernels:
            ins = code.instructions
            for i, p in enumerate(ins):
                sb = p.control.wbar
                if sb == NO_BAR or not p.ops.writes:
                    continue
                covered = False
                for j in range(i + 1, len(ins)):
                    if j in code.labels:
                        break
                    covered |= bool(ins[j].control.wait >> sb & 1)
                    if ins[j].ops.reads & p.ops.writes or ins[j].ops.writes & p.ops.writes:
                        assert covered, (code.name, p.text, ins[j].text)
                        checked += 1
                        break
    assert checked > 2000


def test_fixed_latency_alu_sets_no_scoreboard(programs):
    alu = {"IMAD", "IADD3", "LOP3", "FFMA", "FADD", "FMUL", "ISETP", "FSETP", "SEL", "VIADD"}
    for prog in programs.values():
        for ins in prog.kernels[0].instructions:
            if ins.base in alu:
                assert ins.control.wbar == NO_BAR and ins.control.rbar == NO_BAR, ins.text


def test_reuse_bits_match_reuse_markers(programs):
    """nvdisasm prints .reuse exactly where the reuse bits are set (ALU instructions)."""
    n = 0
    for prog in programs.values():
        for ins in prog.kernels[0].instructions:
            if ins.ops.known and ins.ops.mem is None:
                assert bool(ins.control.reuse) == (".reuse" in ins.text), ins.text
                n += bool(ins.control.reuse)
    assert n > 100


def test_listing_parser_on_text():
    listing = """
\t.section\t.text.k,"ax",@progbits
        /*0000*/                   MOV R1, c[0x0][0x28] ;   /* 0x00000a0000017a02 */
                                                            /* 0x000fe40000000f00 */
.L_x_0:
        /*0010*/                   BRA `(.L_x_0);           /* 0xfffffffc00fc7947 */
                                                            /* 0x000fc0000383ffff */
"""
    ks = parse_listing(listing)["k"]
    assert [ln.text for ln in ks.lines] == ["MOV R1, c[0x0][0x28]", "BRA `(.L_x_0)"]
    assert ks.labels == {0x10: ".L_x_0"}
    assert ks.lines[0].word == 0x00000A0000017A02 | 0x000FE40000000F00 << 64
