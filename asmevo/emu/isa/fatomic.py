"""Float atomics of the memory units: global_atomic_pk_add_bf16, buffer_atomic_add_f32,
buffer_atomic_pk_add_f16 (and their buffer/global siblings of the same arithmetic).

What the CDNA3 ISA guide pins down (10.3.1, "Floating-point atomics"): the
rounding is fixed round-to-nearest-even; FP16 atomics keep denormals; FP32
atomics "flush denormals", without saying whether inputs, results or both
are flushed, nor with which sign; BF16 is not mentioned; the NaN a float atomic
returns is not specified. So each lane is computed exactly where the guide is
exact and the instruction is refused (UnsupportedInstruction, naming the
reason) when a lane meets what it leaves open: a denormal operand or result
(FP32, BF16), a NaN operand or result (all three). Lanes of one instruction that
hit the same address are refused too: their order is unspecified and float
addition does not commute with rounding. Lanes the V# range check drops do not
touch memory. The returning forms (sc0) are refused: the guide says float
atomics must use SC[0] = 0.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from asmevo.emu.isa import vmem
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.errors import UnsupportedInstruction

U16, U32, U64 = np.uint16, np.uint32, np.uint64
F16, F32, F64 = np.float16, np.float32, np.float64


class _Refuse(Exception):
    """A lane whose result the guide leaves open (the message says which case)."""


def _bf16_to_f64(h: np.ndarray) -> np.ndarray:
    return (h.astype(U32) << U32(16)).view(F32).astype(F64)


def _round_bf16(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Round float64 values (exact sum = s + err) to bf16 bits, nearest even."""
    with np.errstate(all="ignore"):
        mag = np.abs(s)
        safe = np.where(mag > 0, mag, 1.0)
        _, e2 = np.frexp(safe)
        quantum = np.ldexp(1.0, (e2 - 1 - 7).astype(np.int32))
        q = safe / quantum                       # exact (power-of-two scaling)
        r = np.rint(q)
        tie = (q - np.floor(q)) == 0.5
        toward = np.where(np.signbit(s), -err, err)   # error seen from the magnitude
        r = np.where(tie & (toward > 0), np.floor(q) + 1, r)
        r = np.where(tie & (toward < 0), np.floor(q), r)
        val = np.where(mag > 0, np.copysign(r * quantum, s), s)
        bits = val.astype(F32).view(U32)          # exact: val has 8 significant bits
    return (bits >> U32(16)).astype(U32)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        s = a + b
        bb = s - a
        return s, (a - (s - bb)) + (b - bb)


def add_f32(old: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Per-lane f32 atomic add (bits in, bits out); raises _Refuse for open cases."""
    a, b = old.view(F32), data.view(F32)
    with np.errstate(all="ignore"):
        r = (a + b).astype(F32)
    tiny = np.float32(2.0 ** -126)
    for x, what in ((a, "memory operand"), (b, "data operand"), (r, "result")):
        if np.isnan(x).any():
            raise _Refuse(f"NaN {what} (the guide gives no NaN for float atomics)")
        if ((x != 0) & (np.abs(x) < tiny)).any():
            raise _Refuse(f"denormal {what} (FP32 atomic flushing is not specified exactly)")
    return r.view(U32)


def pk_add_f16(old: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Two f16 adds per dword, RNE, denormals kept (the guide: FP16 atomics do not flush)."""
    out = np.zeros(old.shape, U32)
    for sh in (0, 16):
        a = ((old >> U32(sh)) & U32(0xFFFF)).astype(U16).view(F16)
        b = ((data >> U32(sh)) & U32(0xFFFF)).astype(U16).view(F16)
        with np.errstate(all="ignore"):
            r = (a + b).astype(F16)          # one correctly rounded f16 operation
        if np.isnan(a).any() or np.isnan(b).any() or np.isnan(r).any():
            raise _Refuse("NaN half (the guide gives no NaN for float atomics)")
        out |= r.view(U16).astype(U32) << U32(sh)
    return out


def pk_add_bf16(old: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Two bf16 adds per dword, RNE; denormal or NaN halves are refused."""
    out = np.zeros(old.shape, U32)
    tiny = 2.0 ** -126
    for sh in (0, 16):
        a = _bf16_to_f64((old >> U32(sh)) & U32(0xFFFF))
        b = _bf16_to_f64((data >> U32(sh)) & U32(0xFFFF))
        s, err = _two_sum(a, b)
        r = _round_bf16(s, err)
        rv = _bf16_to_f64(r)
        for x, what in ((a, "memory operand"), (b, "data operand"), (rv, "result")):
            if np.isnan(x).any():
                raise _Refuse(f"NaN bf16 {what} (the guide gives no NaN for float atomics)")
            if ((x != 0) & (np.abs(x) < tiny)).any():
                raise _Refuse(f"denormal bf16 {what} (BF16 atomic denormals are not specified)")
        out |= r << U32(sh)
    return out


FLOAT_ATOMICS = {"add_f32": add_f32, "pk_add_f16": pk_add_f16, "pk_add_bf16": pk_add_bf16}


_LANE_ORDER = [False]


@contextmanager
def lane_order_for_timing():
    """While the timing model emulates a launch for its trace (the values it computes are
    discarded: only addresses and control flow are kept), lanes of one float atomic that
    hit the same address are applied in lane order instead of refused. Never for a run
    whose values are compared."""
    before = _LANE_ORDER[0]
    _LANE_ORDER[0] = True
    try:
        yield
    finally:
        _LANE_ORDER[0] = before


def apply(c, ins: Insn, offs: np.ndarray, data: np.ndarray, fn):
    """Read-modify-write the checked heap offsets (distinct); returns the pre-op values."""
    mem = c.launch.mem
    if _LANE_ORDER[0] and np.unique(offs).size != offs.size:
        old = np.empty(offs.size, U32)
        left = np.arange(offs.size)
        while left.size:                # rounds of distinct addresses, each in lane order
            _, first = np.unique(offs[left], return_index=True)
            now = left[np.sort(first)]
            old[now] = apply(c, ins, offs[now], data[now], fn)
            left = np.setdiff1d(left, now, assume_unique=True)
        return old
    if np.unique(offs).size != offs.size:
        raise UnsupportedInstruction(ins.mnemonic, c.kernel, c.address,
                                     "lanes of one float atomic hit the same address "
                                     "(their order is unspecified)")
    old = mem.load(offs, 4).copy()
    try:
        new = fn(old, data)
    except _Refuse as exc:
        raise UnsupportedInstruction(ins.mnemonic, c.kernel, c.address, str(exc)) from None
    mem.store(offs, 4, new.astype(U32))
    return old


def _no_return(ins: Insn) -> None:
    if ins.mods.get("glc") or ins.mods.get("sc0"):
        raise ins.fail("returning float atomic (the guide requires SC[0] = 0)")


@register("global_atomic_pk_add_bf16")
def _global_float_atomic(ins: Insn) -> Decoded:
    fn = FLOAT_ATOMICS[ins.base.split("_atomic_")[1]]
    _no_return(ins)
    addr = vmem._global_addr(ins, 0, 2)
    data_reg = ins.ops[1].reg

    def run(c):
        if c.lanes == 0:
            return
        a = vmem._active_flat(c, addr(c))
        offs = c.launch.mem.check(a, 4, True, (c.kernel, c.address))
        apply(c, ins, offs, vmem._active_flat(c, c.vr(data_reg)), fn)
    return op(run)


@register("buffer_atomic_add_f32", "buffer_atomic_pk_add_f16")
def _buffer_float_atomic(ins: Insn) -> Decoded:
    fn = FLOAT_ATOMICS[ins.base.split("_atomic_")[1]]
    _no_return(ins)
    data_reg = ins.ops[0].reg
    addr = vmem._buffer_addr(ins, 4, 1)

    def run(c):
        if c.lanes == 0:
            return
        a, offset, stride, index, nrec = addr(c)
        ok = vmem._active_flat(c, vmem._in_range(offset, stride, index, nrec, 4))
        if ok.any():
            af = vmem._active_flat(c, a)[ok]
            offs = c.launch.mem.check(af, 4, True, (c.kernel, c.address))
            apply(c, ins, offs, vmem._active_flat(c, c.vr(data_reg))[ok], fn)
    return op(run)
