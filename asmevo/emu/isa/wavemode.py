"""Per-wave MODE bits that change how later vector instructions execute:
VSKIP (``s_setvskip``) and VGPR index mode (``s_set_gpr_idx_on/off/idx/mode``).

CDNA3 ISA guide: MODE.VSKIP (bit 28), when set, makes the wave skip vector
ALU, vector memory, LDS and GDS instructions instead of issuing them
(``S_SETVSKIP``: VSKIP = S0[S1[4:0]]). MODE.GPR_IDX_EN (bit 27) turns on VGPR
indexing (6.6): M0[7:0] is an index added to the VGPR operands of VALU
instructions whose role is enabled in M0[15:12] (bit 12 src0, 13 src1, 14 src2,
15 vdst); SGPRs and constants are not indexed; an indexed VGPR outside the
allocation is illegal. ``S_SET_GPR_IDX_ON S0, mode`` sets GPR_IDX_EN, M0[7:0] =
S0[7:0] and M0[15:12] = mode, leaving the rest of M0; ``_OFF`` clears
GPR_IDX_EN; ``_IDX`` sets M0[7:0]; ``_MODE`` sets M0[15:12].

Both bits are wave state, so a program that contains any of these
instructions gets every affected instruction wrapped (:func:`asmevo.emu.run.wavewrap.wrap`): waves
with the bit clear run the instruction as decoded, waves with VSKIP set skip
it, and waves in index mode run a re-decoded copy whose operands are the
indexed registers (one copy per index and mode, cached). The guide's special
cases of index mode (readlane; writelane other than its VGPR destination;
MAC/MAD forms whose destination is also a source; the reversed shifts;
v_cvt_pkaccum; SDWA and DPP forms; instructions with a second, scalar
destination) are refused rather than guessed.
"""
from __future__ import annotations

import re

import numpy as np

from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader, split_operands
from asmevo.emu.machine.state import M0

U32 = np.uint32
VECTOR_PREFIXES = ("v_", "buffer_", "tbuffer_", "global_", "flat_", "scratch_", "ds_", "image_")
_IDX_BITS = {"SRC0": 1, "SRC1": 2, "SRC2": 4, "DST": 8}
# index-mode role -> operand slot in the text (dst first, then src0, src1, src2)
_ROLE_SLOT = ((0, 1), (1, 2), (2, 3), (3, 0))
_SECOND_DST = re.compile(r"^v_(add|sub|subrev)(c|b)?_co_u32|^v_addc_co|^v_subb|^v_div_scale|"
                         r"^v_mad_(u|i)64|^v_cmpx?_|^v_cmp_class")
_REFUSED = re.compile(r"^v_readlane|^v_readfirstlane|^v_mac_|^v_fmac_|^v_(lshl|lshr|ashr)rev|"
                      r"^v_cvt_pkaccum|^v_mfma|^v_smfmac|^v_dot\d+c_|^v_accvgpr|^v_swap|"
                      r"^v_mov_b64|^v_movrel")


def _bits(st, name: str) -> np.ndarray:
    arr = st.__dict__.get(name)
    if arr is None:
        arr = st.__dict__[name] = np.zeros(st.nwaves, bool)
    return arr


def vskip(st) -> np.ndarray:
    """MODE.VSKIP of every wave of the batch (False at launch)."""
    return _bits(st, "mode_vskip")


def gpr_idx_en(st) -> np.ndarray:
    """MODE.GPR_IDX_EN of every wave of the batch (False at launch)."""
    return _bits(st, "mode_gpr_idx_en")


def _idx_mode(ins: Insn, text: str) -> int:
    t = text.strip()
    m = re.fullmatch(r"gpr_idx\(([A-Z0-9_, ]*)\)", t)
    if m:
        bits = 0
        for name in filter(None, (p.strip() for p in m.group(1).split(","))):
            if name not in _IDX_BITS:
                raise ins.fail(f"index mode {name}")
            bits |= _IDX_BITS[name]
        return bits
    try:
        return int(t, 0) & 15
    except ValueError:
        raise ins.fail(f"index mode {text!r}") from None


@register("s_setvskip")
def _setvskip(ins: Insn) -> Decoded:
    r0 = raw_reader(ins.ops[0], 32, vector=False)
    r1 = raw_reader(ins.ops[1], 32, vector=False)

    def run(c):
        val = np.broadcast_to(r0(c), (c.w,)).astype(U32)
        bit = np.broadcast_to(r1(c), (c.w,)).astype(U32) & U32(31)
        vskip(c.st)[c.idx] = ((val >> bit) & U32(1)).astype(bool)
    return op(run)


def _set_m0(c, keep: int, val) -> None:
    c.sw(M0, (c.sr(M0) & U32(keep)) | np.asarray(val, U32))


@register("s_set_gpr_idx_on")
def _gpr_idx_on(ins: Insn) -> Decoded:
    r0 = raw_reader(ins.ops[0], 32, vector=False)
    mode = U32(_idx_mode(ins, ins.raw_ops[1]) << 12)

    def run(c):
        idx = np.broadcast_to(r0(c), (c.w,)).astype(U32) & U32(0xFF)
        _set_m0(c, 0xFFFF0F00, idx | mode)
        gpr_idx_en(c.st)[c.idx] = True
    return op(run)


@register("s_set_gpr_idx_off")
def _gpr_idx_off(ins: Insn) -> Decoded:
    return op(lambda c: gpr_idx_en(c.st).__setitem__(c.idx, False))


@register("s_set_gpr_idx_idx")
def _gpr_idx_idx(ins: Insn) -> Decoded:
    r0 = raw_reader(ins.ops[0], 32, vector=False)
    return op(lambda c: _set_m0(c, 0xFFFFFF00,
                                np.broadcast_to(r0(c), (c.w,)).astype(U32) & U32(0xFF)))


@register("s_set_gpr_idx_mode")
def _gpr_idx_mode(ins: Insn) -> Decoded:
    mode = U32(_idx_mode(ins, ins.raw_ops[0]) << 12)
    return op(lambda c: _set_m0(c, 0xFFFF0FFF, np.full(c.w, mode, U32)))


def needed(texts) -> frozenset[str]:
    """Which wave modes a program's instruction texts can turn on ("vskip", "gpr_idx")."""
    out = set()
    for t in texts:
        m = t.split(None, 1)[0] if t.strip() else ""
        if m == "s_setvskip":
            out.add("vskip")
        elif m in ("s_set_gpr_idx_on", "s_set_gpr_idx_mode", "s_set_gpr_idx_idx"):
            out.add("gpr_idx")
    return frozenset(out)


def indexed_text(ins: Insn, index: int, mode: int) -> str:
    """The instruction text with the index added to the VGPRs of the enabled roles."""
    base = ins.base
    if ins.encoding in ("sdwa", "dpp"):
        raise ins.fail(f"{ins.encoding} form in VGPR index mode")
    if _REFUSED.match(base) or _SECOND_DST.match(base):
        raise ins.fail("this instruction's index-mode operand roles are special cases")
    if base == "v_writelane_b32" and mode & 7:
        raise ins.fail("v_writelane_b32 source roles in index mode")
    parts = ins.text.split(None, 1)
    raw, mods = split_operands(parts[1]) if len(parts) > 1 else ([], [])
    for bit, slot in _ROLE_SLOT:
        if mode & (1 << bit) and slot < len(raw):
            raw[slot] = _shift_vgpr(ins, raw[slot], index)
    return " ".join([f"{ins.mnemonic} {', '.join(raw)}", *mods])


VREG = re.compile(r"(?<![\w])v(?:(\d+)|\[(\d+):(\d+)\])(?![\w])")


def _shift_vgpr(ins: Insn, text: str, index: int) -> str:
    if re.search(r"(?<![\w])a(\d+|\[)", text):
        raise ins.fail(f"AGPR operand {text} in VGPR index mode")

    def sub(m):
        if m.group(1) is not None:
            return f"v{int(m.group(1)) + index}"
        return f"v[{int(m.group(2)) + index}:{int(m.group(3)) + index}]"
    return VREG.sub(sub, text)
