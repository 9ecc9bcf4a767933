"""Matrix fused multiply-add (v_mfma_*), single-block shapes.

Lane layouts (CDNA3 ISA, "Dependent Instructions"/"MFMA"): for an M x N x K
op, lane l holds A row ``l % M`` and B column ``l % N``, with its ``kpl``
consecutive k values starting at ``kpl * (l // M)``. The accumulator of a
32x32 op spans 16 registers: register r, lane l is row
``8*(r//4) + 4*(l//32) + r%4``, column ``l % 32``; of a 16x16 op, 4 registers:
row ``4*(l//16) + r``, column ``l % 16``. Hardware accumulation order is
unspecified, so float MFMA is a function family (:mod:`asmevo.emu.numerics.approx`):
variant 0 sums the products in float64 and rounds once to float32.
MFMA ignores EXEC.
"""
from __future__ import annotations

import re

import numpy as np

from asmevo.emu.numerics import approx, fpmode
from asmevo.emu.isa.insn import Decoded, Insn, op, register
from asmevo.emu.isa.operands import raw_reader

U16, U32, U64 = np.uint16, np.uint32, np.uint64

_NAME = re.compile(r"^v_mfma_(f32|i32|f64)_(\d+)x(\d+)x(\d+)_?(f16|bf16|f32|i8|f64|bf16_1k)$")


def _elements(words: list[np.ndarray], et: str) -> np.ndarray:
    """Registers (each (w,64) uint32) -> (w, 64, kpl) float64 / int64 values."""
    if et == "f32":
        return np.stack([w.view(np.float32).astype(np.float64) for w in words], axis=-1)
    if et == "f64":
        v = [(words[i].astype(U64) | (words[i + 1].astype(U64) << U64(32))).view(np.float64)
             for i in range(0, len(words), 2)]
        return np.stack(v, axis=-1)
    out = []
    for w in words:
        if et in ("f16", "bf16", "bf16_1k"):
            for h in (0, 16):
                x = ((w >> U32(h)) & U32(0xFFFF))
                if et == "f16":
                    out.append(x.astype(U16).view(np.float16).astype(np.float64))
                else:
                    out.append((x << U32(16)).view(np.float32).astype(np.float64))
        elif et == "i8":
            for b in range(4):
                x = ((w >> U32(8 * b)) & U32(0xFF)).astype(np.int64)
                out.append(np.where(x >= 128, x - 256, x))
    return np.stack(out, axis=-1)


@register("v_mfma_f32_32x32x8_f16", "v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16_f16",
          "v_mfma_f32_16x16x16f16", "v_mfma_f32_32x32x2_f32", "v_mfma_f32_32x32x2f32",
          "v_mfma_f32_16x16x4_f32", "v_mfma_f32_16x16x4f32", "v_mfma_f32_32x32x8_bf16",
          "v_mfma_f32_16x16x16_bf16", "v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_16x16x16bf16_1k",
          "v_mfma_i32_32x32x16_i8", "v_mfma_i32_16x16x32_i8", "v_mfma_i32_32x32x8i8",
          "v_mfma_i32_16x16x16i8", "v_mfma_f64_16x16x4_f64", "v_mfma_f64_16x16x4f64")
def _mfma(ins: Insn) -> Decoded:
    name = ins.base
    norm = re.sub(r"x(\d+)(f16|bf16|f32|i8|f64)", r"x\1_\2", name)
    m = _NAME.match(norm)
    if not m:
        raise ins.fail("MFMA shape")
    out_t, M, N, K, et = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5)
    if any(int(ins.mods.get(k, 0)) for k in ("cbsz", "abid", "blgp")):
        raise ins.fail("cbsz/abid/blgp broadcast controls")
    if M != N or M not in (16, 32):
        raise ins.fail("MFMA shape")
    groups = 64 // M
    kpl = K // groups
    d, a, b, cop = ins.ops[0], ins.ops[1], ins.ops[2], ins.ops[3]
    per_word = {"f32": 1, "f64": 0.5, "i8": 4}.get(et, 2)
    na = max(1, int(round(kpl / per_word)))
    nacc = (M * N // 64) * (2 if out_t == "f64" else 1)
    lanes = np.arange(64)
    if M == 32:
        rows = np.array([[8 * (r // 4) + 4 * (lanes // 32) + r % 4] for r in range(16)])[:, 0, :]
        cols = np.broadcast_to(lanes % 32, (16, 64))
    else:
        rows = np.array([4 * (lanes // 16) + r for r in range(4)])
        cols = np.broadcast_to(lanes % 16, (4, 64))
    if out_t == "f64":
        raise ins.fail("f64 MFMA layout")
    a_row, a_k0 = lanes % M, kpl * (lanes // M)
    b_col, b_k0 = lanes % N, kpl * (lanes // N)
    c_const = raw_reader(cop, 32, True) if cop.kind == "const" else None

    def run(c):
        st = c.st
        aw = [st.v[a.reg + i, c.idx] for i in range(na)]
        bw = [st.v[b.reg + i, c.idx] for i in range(na)]
        av = _elements(aw, et)          # (w, 64, kpl)
        bv = _elements(bw, et)
        w = c.w
        dt = np.float64 if out_t == "f32" else np.int64
        A = np.zeros((w, M, K), dt)
        B = np.zeros((w, K, N), dt)
        for j in range(kpl):
            A[:, a_row, a_k0 + j] = av[:, :, j]
            B[:, b_k0 + j, b_col] = bv[:, :, j]
        if c_const is not None:
            C = np.broadcast_to(c_const(c), (w, 64)).astype(U32)
            cregs = [C] * nacc
        else:
            cregs = [st.v[cop.reg + r, c.idx].copy() for r in range(nacc)]
        with np.errstate(all="ignore"):   # inf/NaN inputs give inf/NaN, as on hardware
            D = np.matmul(A, B)             # (w, M, N)
        variant = 0
        if out_t == "f32":                  # rounding instruction; summation order is a family
            fpmode.check_round(c, fpmode.mode_of(c, ins.mnemonic), 32, ins.mnemonic)
            variant = c.approx_variant
        for r in range(nacc):
            prod = D[:, rows[r], cols[r]]
            if out_t == "f32" and variant:
                res = approx.mfma_member(A[:, rows[r], :] * np.swapaxes(B, 1, 2)[:, cols[r], :],
                                         cregs[r].view(np.float32), variant)
                st.v[d.reg + r, c.idx] = res.view(U32)
            elif out_t == "f32":
                with np.errstate(all="ignore"):
                    res = (prod + cregs[r].view(np.float32).astype(np.float64)
                           ).astype(np.float32)
                st.v[d.reg + r, c.idx] = res.view(U32)
            else:
                res = prod + cregs[r].view(np.int32).astype(np.int64)
                st.v[d.reg + r, c.idx] = (res & 0xFFFFFFFF).astype(U32)
    return op(run, variant=True)
