"""Registers as bits of one Python int, so sets of registers cost one ``&``.

Every analysis here (liveness, dependencies, waitcnt, hazards) intersects and
unions register sets millions of times; integer bit masks keep a 700-line
kernel well under the time budget. Bit numbers follow the GFX9 operand
encoding for scalar registers, so ``vcc`` is bits 106-107 and ``exec`` 126-127.
"""
from __future__ import annotations

import re

SGPR_BASE = 0            # s0..s101, then the named scalar registers below
FLAT_SCRATCH = 102       # flat_scratch_lo / _hi
XNACK_MASK = 104
VCC = 106
TTMP = 108               # ttmp0..ttmp15
M0 = 124
EXEC = 126
SCC = 128
VGPR_BASE = 256          # v0..v511
AGPR_BASE = 768          # a0..a255
NBITS = 1024

ALL = (1 << NBITS) - 1
VCC_MASK = 0b11 << VCC
EXEC_MASK = 0b11 << EXEC
M0_MASK = 1 << M0
SCC_MASK = 1 << SCC
SGPR_MASK = ((1 << 128) - 1)            # every scalar register incl. vcc/exec/m0
VGPR_MASK = ((1 << 512) - 1) << VGPR_BASE
AGPR_MASK = ((1 << 256) - 1) << AGPR_BASE
VECTOR_MASK = VGPR_MASK | AGPR_MASK

_RANGE = re.compile(r"(?<![\w.])(s|v|a|ttmp)(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
_NAMED = {
    "vcc": VCC_MASK, "vcc_lo": 1 << VCC, "vcc_hi": 1 << (VCC + 1), "vccz": VCC_MASK,
    "exec": EXEC_MASK, "exec_lo": 1 << EXEC, "exec_hi": 1 << (EXEC + 1), "execz": EXEC_MASK,
    "m0": M0_MASK, "scc": SCC_MASK,
    "flat_scratch": 0b11 << FLAT_SCRATCH, "flat_scratch_lo": 1 << FLAT_SCRATCH,
    "flat_scratch_hi": 1 << (FLAT_SCRATCH + 1),
    "xnack_mask": 0b11 << XNACK_MASK, "xnack_mask_lo": 1 << XNACK_MASK,
    "xnack_mask_hi": 1 << (XNACK_MASK + 1),
}
_NAMED_RE = re.compile(r"(?<![\w.])(" + "|".join(sorted(_NAMED, key=len, reverse=True))
                       + r")(?![\w])")
_BASE = {"s": SGPR_BASE, "v": VGPR_BASE, "a": AGPR_BASE, "ttmp": TTMP}


def span(first: int, last: int) -> int:
    return ((1 << (last - first + 1)) - 1) << first


def operand_mask(text: str) -> int:
    """The registers one operand (or any operand text) names."""
    mask = 0
    for m in _RANGE.finditer(text):
        base = _BASE[m.group(1)]
        if m.group(4) is not None:
            mask |= 1 << (base + int(m.group(4)))
        else:
            first = int(m.group(2))
            last = int(m.group(3)) if m.group(3) is not None else first
            mask |= span(base + first, base + last)
    for m in _NAMED_RE.finditer(text):
        mask |= _NAMED[m.group(1)]
    return mask


def count(mask: int) -> int:
    return bin(mask).count("1")


def names(mask: int) -> list[str]:
    """Readable names of the registers in ``mask``, consecutive ones joined (v[4:7])."""
    out: list[str] = []
    special = {VCC: "vcc_lo", VCC + 1: "vcc_hi", EXEC: "exec_lo", EXEC + 1: "exec_hi",
               M0: "m0", SCC: "scc", FLAT_SCRATCH: "flat_scratch_lo",
               FLAT_SCRATCH + 1: "flat_scratch_hi", XNACK_MASK: "xnack_mask_lo",
               XNACK_MASK + 1: "xnack_mask_hi"}
    if mask & VCC_MASK == VCC_MASK:
        out.append("vcc")
        mask &= ~VCC_MASK
    if mask & EXEC_MASK == EXEC_MASK:
        out.append("exec")
        mask &= ~EXEC_MASK
    bit = 0
    while mask >> bit:
        if not (mask >> bit) & 1:
            bit += 1
            continue
        if bit in special:
            out.append(special[bit])
            bit += 1
            continue
        kind, base = (("a", AGPR_BASE) if bit >= AGPR_BASE else ("v", VGPR_BASE)
                      if bit >= VGPR_BASE else ("ttmp", TTMP) if TTMP <= bit < M0 else ("s", 0))
        end = bit
        limit = {"a": NBITS, "v": AGPR_BASE, "ttmp": M0, "s": FLAT_SCRATCH}[kind]
        while end + 1 < limit and (mask >> (end + 1)) & 1:
            end += 1
        first, last = bit - base, end - base
        out.append(f"{kind}{first}" if first == last else f"{kind}[{first}:{last}]")
        bit = end + 1
    return out


def render(mask: int) -> str:
    return ", ".join(names(mask)) if mask != ALL else "all registers"
