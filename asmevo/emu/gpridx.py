"""VGPR index mode (gfx9): ``s_set_gpr_idx_on sIdx, gpr_idx(...)`` .. ``s_set_gpr_idx_off``.

LLVM lowers a dynamically indexed small private array kept in registers to
a bundle::

    s_set_gpr_idx_on s0, gpr_idx(SRC0)     ; M0[7:0] = s0[7:0], M0[15:12] = mode
    v_mov_b32_e32 v1, v26                  ; reads v[26 + M0[7:0]]
    s_set_gpr_idx_off

While the mode is on, every VGPR operand of a VALU instruction in an enabled
position (bit 0-2: src0-src2, bit 3: dst) is offset by M0[7:0]. The mode is
modelled per straight-line region: :func:`wrap_regions` rewrites the
instructions between an ``on`` and the next ``off`` into indexed forms that
read M0 when they execute (each wave may hold its own index). A region that a
branch enters or leaves, or one holding anything but ``v_mov_b32``/
``v_mov_b64`` (the only instructions LLVM puts there), is refused.
"""
from __future__ import annotations

import re

import numpy as np

from asmevo.emu.decode import Decoded, Insn, op, register, split_operands
from asmevo.emu.errors import EmulatorError, UnsupportedInstruction
from asmevo.emu.operands import raw_reader
from asmevo.emu.state import M0, Ctx

_MODE_BITS = {"SRC0": 1, "SRC1": 2, "SRC2": 4, "DST": 8}
_INDEXABLE = {"v_mov_b32_e32", "v_mov_b32_e64", "v_mov_b64_e32", "v_mov_b64_e64"}
_VREG = re.compile(r"^v(?:(\d+)|\[(\d+):(\d+)\])$")


def parse_mode(text: str) -> int:
    t = text.strip()
    if t.startswith("gpr_idx(") and t.endswith(")"):
        names = [x.strip() for x in t[8:-1].split(",") if x.strip()]
        if any(n not in _MODE_BITS for n in names):
            raise ValueError(f"bad gpr_idx mode {text!r}")
        return sum(_MODE_BITS[n] for n in names)
    v = int(t, 0)
    if not 0 <= v <= 15:
        raise ValueError(f"gpr_idx mode {text!r} out of range")
    return v


@register("s_set_gpr_idx_on")
def _on(ins: Insn) -> Decoded:
    src = raw_reader(ins.ops[0], 32, False)
    mode = parse_mode(ins.raw_ops[1])

    def run(c):
        m0 = c.sr(M0)
        c.sw(M0, (m0 & np.uint32(0xFFFF0F00)) | (src(c) & np.uint32(0xFF))
             | np.uint32(mode << 12))
    return op(run)


@register("s_set_gpr_idx_idx")
def _idx(ins: Insn) -> Decoded:
    src = raw_reader(ins.ops[0], 32, False)

    def run(c):
        c.sw(M0, (c.sr(M0) & np.uint32(0xFFFFFF00)) | (src(c) & np.uint32(0xFF)))
    return op(run)


@register("s_set_gpr_idx_off")
def _off(ins: Insn) -> Decoded:
    return op(lambda c: None)     # the mode bit only matters inside a region (wrap_regions)


def _shift(operand: str, by: int) -> str:
    m = _VREG.match(operand.strip())
    if m is None:
        return operand
    if m.group(1) is not None:
        return f"v{int(m.group(1)) + by}"
    return f"v[{int(m.group(2)) + by}:{int(m.group(3)) + by}]"


def indexed_text(text: str, mode: int, by: int) -> str:
    """``text`` with its VGPR operands in the enabled positions offset by ``by``."""
    mnemonic, _, rest = text.partition(" ")
    ops, mods = split_operands(rest)
    for pos in range(len(ops)):
        bit = 8 if pos == 0 else 1 << (pos - 1)
        if mode & bit:
            ops[pos] = _shift(ops[pos], by)
    return f"{mnemonic} {', '.join(ops)}" + (" " + " ".join(mods) if mods else "")


def _refuse(d: Decoded, detail: str) -> Decoded:
    err = UnsupportedInstruction(d.mnemonic, None, d.address, detail)

    def fn(c):
        raise err
    return Decoded(d.index, d.text, d.mnemonic, d.address, ctl="fault", fn=fn, error=err)


def _indexed(d: Decoded, mode: int, redecode) -> Decoded:
    variants: dict[int, Decoded] = {}

    def variant(by: int, nregs: int) -> Decoded:
        v = variants.get(by)
        if v is None:
            text = indexed_text(d.text, mode, by)
            top = max((int(x) for x in re.findall(r"v\[?(\d+)", text)), default=0)
            if top >= nregs:
                raise EmulatorError(f"VGPR index {by} of {d.text!r} runs past the register "
                                    "file", address=d.address)
            v = redecode(text)
            if v.ctl != "op":
                raise v.error or EmulatorError(f"cannot index {d.text!r}", address=d.address)
            variants[by] = v
        return v

    def run(c: Ctx):
        idx = c.sr(M0) & np.uint32(0xFF)
        vals = np.unique(idx).tolist()
        nregs = c.st.v.shape[0]
        if len(vals) == 1:
            variant(int(vals[0]), nregs).fn(c)
            return
        for by in vals:
            variant(by, nregs).fn(Ctx(c.st, c.waves[idx == by], c.launch))
    return Decoded(d.index, d.text, d.mnemonic, d.address, ctl="op", fn=run)


def wrap_regions(code: list[Decoded], start: int, end: int, targets: set[int],
                 redecode) -> None:
    """Rewrite the index-mode regions of ``code[start:end]`` (one function) in place.

    ``targets``: instruction indices some label names (a branch may land there);
    ``redecode(text, index, address)`` decodes rewritten text.
    """
    i = start
    while i < end:
        if code[i].mnemonic != "s_set_gpr_idx_on":
            i += 1
            continue
        on = code[i]
        try:
            mode = parse_mode(split_operands(on.text.partition(" ")[2])[0][1])
        except (ValueError, IndexError):
            code[i] = _refuse(on, "cannot read the gpr_idx mode")
            i += 1
            continue
        j = i + 1
        bad = None
        while j < end and code[j].mnemonic != "s_set_gpr_idx_off":
            if j in targets or code[j].ctl != "op":
                bad = "a branch enters or leaves the VGPR index region"
            elif code[j].mnemonic.startswith("v_") and code[j].mnemonic not in _INDEXABLE:
                bad = f"{code[j].mnemonic} in VGPR index mode"
            j += 1
        if j >= end or j in targets:
            bad = bad or "VGPR index region without s_set_gpr_idx_off"
        if bad:
            code[i] = _refuse(on, bad)
        else:
            for k in range(i + 1, j):
                if code[k].mnemonic.startswith("v_"):
                    d = code[k]
                    code[k] = _indexed(d, mode, lambda t, d=d: redecode(t, d.index, d.address))
        i = j + 1
