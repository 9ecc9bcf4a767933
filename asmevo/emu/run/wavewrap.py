"""Wave-mode checks in front of a decoded vector instruction (see :mod:`asmevo.emu.isa.wavemode`).

Waves with VSKIP set skip the instruction; waves in VGPR index mode run a
re-decoded copy whose operands are the indexed registers (one copy per index
and mode, cached). This sits above the decoder because a copy is decoded from
text like any instruction; the mode-setting instructions themselves are
builders in :mod:`asmevo.emu.isa.wavemode`.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.isa.decode import decode_one
from asmevo.emu.errors import UnsupportedInstruction
from asmevo.emu.isa.insn import Decoded, parse
from asmevo.emu.machine.state import M0, Ctx
from asmevo.emu.isa.wavemode import VECTOR_PREFIXES, VREG, gpr_idx_en, indexed_text, vskip

U32 = np.uint32


def wrap(d: Decoded, modes: frozenset[str], *, accum_offset: int, processor: str,
         kernel: str | None) -> Decoded:
    """``d`` with the wave-mode checks of ``modes`` in front (unchanged if none apply)."""
    if d.ctl != "op" or not modes or not d.mnemonic.startswith(VECTOR_PREFIXES):
        return d
    skip = "vskip" in modes
    index = "gpr_idx" in modes and d.mnemonic.startswith("v_")
    if not (skip or index):
        return d
    plain = d.fn
    variants: dict[tuple[int, int], object] = {}

    def variant(idx: int, mode: int, c):
        key = (idx, mode)
        fn = variants.get(key)
        if fn is None:
            ins = parse(d.text, index=d.index, address=d.address, kernel=kernel,
                        accum_offset=accum_offset, processor=processor)
            text = indexed_text(ins, idx, mode)
            vd = decode_one(text, index=d.index, address=d.address, kernel=kernel,
                            accum_offset=accum_offset, processor=processor)
            top = _highest_vgpr(vd, text)
            fn = variants[key] = (vd.fn, top, text)
        vfn, top, text = fn
        if top >= c.st.v.shape[0]:
            raise UnsupportedInstruction(d.mnemonic, kernel, d.address,
                                         f"index mode makes it '{text}', past the register file")
        return vfn

    def run(c):
        st = c.st
        sk = vskip(st)[c.idx] if skip else None
        ix = gpr_idx_en(st)[c.idx] if index else None
        if (sk is None or not sk.any()) and (ix is None or not ix.any()):
            return plain(c)
        m0 = c.sr(M0)
        keys = np.where(sk, -1, 0) if sk is not None else np.zeros(c.w, np.int64)
        if ix is not None:
            keys = np.where((keys == 0) & ix, 1 + (m0 & U32(0xF0FF)).astype(np.int64), keys)
        for k in np.unique(keys):
            if k < 0:
                continue
            sub = Ctx(st, np.asarray(c.waves)[keys == k], c.launch)
            sub.address = c.address
            if k == 0:
                plain(sub)
            else:
                bits = int(k - 1)
                variant(bits & 0xFF, (bits >> 12) & 15, sub)(sub)
        c.exec_changed()
    return Decoded(d.index, d.text, d.mnemonic, d.address, ctl="op", fn=run, error=d.error,
                   extra=d.extra, variant=d.variant)


def _highest_vgpr(vd: Decoded, text: str) -> int:
    """The highest VGPR the re-decoded text names (its decode error, if it has one)."""
    if vd.ctl == "fault" and vd.error is not None:
        raise vd.error
    top = 0
    for m in VREG.finditer(text):
        top = max(top, int(m.group(1) if m.group(1) is not None else m.group(3)))
    return top
