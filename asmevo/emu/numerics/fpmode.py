"""The MODE register as float instructions see it, and the NaN rules that depend on it.

MODE bits (CDNA3 ISA, "MODE"; the same fields as COMPUTE_PGM_RSRC1 in
AMDGPUUsage): [1:0] FP_ROUND f32, [3:2] FP_ROUND f16/f64, [5:4] FP_DENORM
f32, [7:6] FP_DENORM f16/f64, [8] DX10_CLAMP, [9] IEEE. A denormal field is
0 flush source and destination, 1 flush destination only, 2 flush source only,
3 flush nothing.

Only round-to-nearest-even is modeled: an instruction that rounds refuses
(:class:`UnsupportedInstruction` naming the mode) when MODE selects another
rounding, never rounds to nearest silently. MODE is per wave (``s_setreg``
may change it under divergent control flow); waves that execute one
instruction together with different MODE values are refused too.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.errors import UnsupportedInstruction

ROUND_NAMES = {1: "round toward +infinity", 2: "round toward -infinity", 3: "round toward zero"}
DX10_CLAMP = 1 << 8
IEEE = 1 << 9
MODELED_BITS = 0x3FF     # round, denorm, DX10_CLAMP, IEEE
FP16_OVFL = 1 << 23
# What ``s_setreg`` may write to MODE above [9:0] (CDNA3 ISA, "MODE"), bit by bit:
# modeled: FP16_OVFL [23] (fp8/bf8 conversions saturate by it, asmevo.emu.numerics.fp8; f16 results
# that overflow while it is set are refused, check_f16_overflow; fp8 MFMA overflow too).
# Stored and read back, proved irrelevant to every result the emulator computes: LOD_CLAMPED
# [10] (image sampling, and every image instruction is refused), POPS_PACKER [25:24] (pixel
# shaders), DISABLE_PERF [26] (performance counters). Exact only at 0, the dispatch value
# (refused otherwise: a set bit makes the wave trap or debug): DEBUG_EN [11], EXCP_EN
# [18:12] (invalid, input denormal, divide by zero, overflow, underflow, inexact, integer
# divide by zero), the reserved [22:19]. Not writable here: GPR_IDX_EN [27] and VSKIP [28]
# (per-wave state of s_set_gpr_idx_on / s_setvskip, asmevo.emu.isa.wavemode) and CSP [31:29].
SETREG_STORED = MODELED_BITS | (1 << 10) | FP16_OVFL | (0b111 << 24)
SETREG_ZERO_ONLY = (1 << 11) | (0x7F << 12) | (0xF << 19)
SETREG_REFUSED = 0x1F << 27

_QUIET = {2: np.uint16(1 << 9), 4: np.uint32(1 << 22), 8: np.uint64(1 << 51)}
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def mode_of(c, mnemonic: str = "") -> int:
    """The MODE value of the waves in ``c`` (all of them must agree)."""
    st = c.st
    m = st.mode
    if m is not None:
        return m
    vals = st.wave_mode[c.idx]
    if vals.size and (vals == vals[0]).all():
        return int(vals[0])
    raise UnsupportedInstruction(mnemonic or "float instruction", c.kernel, c.address,
                                 "waves executing together have different MODE values")


def set_mode(c, values) -> None:
    """Write MODE for the waves of ``c`` (``values``: one int or one per wave)."""
    st = c.st
    vals = np.broadcast_to(np.asarray(values, np.int64), (c.w,))
    if st.mode is not None and c.w == st.nwaves and (vals == vals[0]).all():
        st.mode = int(vals[0])
        return
    if st.wave_mode is None or st.mode is not None:
        st.wave_mode = np.full(st.nwaves, st.mode if st.mode is not None else 0, np.int64)
    st.wave_mode[c.idx] = vals
    allv = st.wave_mode
    st.mode = int(allv[0]) if allv.size and (allv == allv[0]).all() else None


def wave_modes(c) -> np.ndarray:
    """MODE of every wave of ``c`` (s_getreg reads it per wave)."""
    st = c.st
    if st.mode is not None:
        return np.full(c.w, st.mode, np.int64)
    return st.wave_mode[c.idx].astype(np.int64)


def setreg_problem(mask: int, new: np.ndarray) -> str | None:
    """Why an ``s_setreg`` of ``mask`` giving the MODE values ``new`` cannot be run exactly
    (None: it can; the bits are listed above SETREG_STORED)."""
    if mask & SETREG_REFUSED:
        return ("writes MODE bits [31:27] (GPR_IDX_EN, VSKIP, CSP: per-wave state kept "
                "elsewhere)")
    if (np.asarray(new) & SETREG_ZERO_ONLY).any():
        return ("sets MODE exception enables, DEBUG_EN or reserved bits ([22:11]): the wave "
                "would trap to a handler on a float exception")
    return None


def check_f16_overflow(c, mode: int, res, srcs, mnemonic: str) -> None:
    """Refuse an f16 result that MODE.FP16_OVFL may clamp.

    With FP16_OVFL set an f16 result that overflowed is clamped to +-65504 "while still
    preserving true INF values" (CDNA3 ISA, MODE). Which infinities of each opcode count as
    overflow (a reciprocal of a denormal, the log of zero) the guide leaves open, so an
    active lane whose f16 result is infinite while all its float operands are finite is
    refused while the bit is set; an infinity from an infinite operand and every finite
    result are what the hardware gives either way.
    """
    if not mode & FP16_OVFL:
        return
    r = np.asarray(res)
    if r.dtype == np.uint16:
        r = r.view(np.float16)
    inf = np.isinf(r)
    if not inf.any():
        return
    for x in srcs:
        x = np.asarray(x)
        if x.dtype.kind == "f":
            inf = inf & np.isfinite(x)
    if c.mask is not None:
        inf = inf & c.mask
    if inf.any():
        raise UnsupportedInstruction(mnemonic, c.kernel, c.address,
                                     "an f16 result overflows to infinity with MODE.FP16_OVFL "
                                     "set (the clamp to 65504 is not modeled per opcode)")


def round_field(mode: int, width: int) -> int:
    return (mode & 3) if width == 32 else (mode >> 2) & 3


def check_round(c, mode: int, width: int, mnemonic: str) -> None:
    """Refuse a rounding instruction when MODE selects a rounding other than nearest-even."""
    f = round_field(mode, width)
    if f:
        raise UnsupportedInstruction(mnemonic, c.kernel, c.address,
                                     f"MODE selects {ROUND_NAMES[f]} for f{width}; only "
                                     "round to nearest even is modeled")


def flush_bits(mode: int, width: int) -> tuple[bool, bool]:
    """(flush inputs, flush outputs) of the denormal field for ``width``-bit floats."""
    field = (mode >> 4) & 3 if width == 32 else (mode >> 6) & 3
    return field in (0, 2), field in (0, 1)


def ieee(mode: int) -> bool:
    return bool(mode & IEEE)


def dx10(mode: int) -> bool:
    return bool(mode & DX10_CLAMP)


# -- NaN bits -----------------------------------------------------------------

def bits_of(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(_UINT[x.dtype.itemsize])


def is_snan(x: np.ndarray) -> np.ndarray:
    """Signalling NaNs: NaN with the quiet bit (the fraction's top bit) clear."""
    x = np.asarray(x)
    return np.isnan(x) & ((bits_of(x) & _QUIET[x.dtype.itemsize]) == 0)


def quiet(x: np.ndarray) -> np.ndarray:
    """cvtToQuietNAN: NaNs get the quiet bit set, payload and sign kept; others unchanged."""
    x = np.asarray(x)
    q = _QUIET[x.dtype.itemsize]
    b = bits_of(x)
    return np.where(np.isnan(x), (b | q), b).astype(b.dtype).view(x.dtype)


def has_snan(*xs, mask=None) -> bool:
    """Whether a float operand holds a signalling NaN in an active lane (``mask``: the
    batch's EXEC lanes, None = all): an inactive lane's register is not read."""
    def snan(x):
        m = is_snan(x)
        return m if mask is None else m & mask
    return any(np.asarray(x).dtype.kind == "f" and bool(snan(x).any()) for x in xs)
