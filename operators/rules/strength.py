"""``strength_reduce``: quarter-rate 32-bit multiplies by known constants, as shifts and adds.

``v_mul_lo_u32 vD, x, C`` keeps the low 32 bits of ``x * C``; shifts, adds and
subtracts modulo 2^32 give exactly those bits for every ``x``:

    C = 2^a + 2^b (a > b)  ->  v_lshl_add_u32 vD, x, a-b, x   [then v_lshlrev_b32 vD, b, vD]
    C = 2^a - 2^b (a > b)  ->  v_lshlrev_b32 vD, a-b, x; v_sub_u32 vD, vD, x  [then << b]
    C = -2^k               ->  v_lshlrev_b32 vD, k, x; v_sub_u32 vD, 0, vD
    C = 2^k, 1, 0          ->  one shift, a move, a move of 0

(the two-instruction forms need ``vD`` != ``x``, or a free VGPR). ``C`` is an
inline constant or an SGPR whose only reaching write is ``s_mov_b32``/
``s_movk_i32`` of a constant, not overwritten before the multiply. A multiply by
an SGPR whose reaching write is ``s_lshl_b32 sP, 1, sK`` (a uniform power of two)
becomes ``v_lshlrev_b32 vD, sK, x``: both read ``sK``'s low 5 bits. ``v_mul_hi_u32
vD, x, 2^k`` is ``v_lshrrev_b32 vD, 32-k, x``. Only when the replacement costs
fewer VALU cycles (a quarter-rate op counts 16, a full-rate one 4).

Refused: no constant operand, a constant without a cheaper form, the source
rewritten between the constant's write and the multiply, no free VGPR.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import candidate_windows, seal
from asmevo.operators.rules.structure import (Flow, WindowedMutation, assembles, between,
                                       first_result, reaching_writes)

_MULS = ("v_mul_lo_u32", "v_mul_lo_i32", "v_mul_hi_u32")


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _log2(v: int) -> int | None:
    v &= 0xFFFFFFFF
    if v == 0 or v & (v - 1):
        return None
    return v.bit_length() - 1


def mul_lo_lines(d: str, x: str, c: int, tmp: str | None) -> list[str] | None:
    """Lines putting the low 32 bits of ``x * c`` into ``d`` (``tmp``: a free VGPR when
    ``d`` is ``x``), cheapest first; None when nothing beats one quarter-rate multiply."""
    c &= 0xFFFFFFFF
    if c == 0:
        return [f"v_mov_b32_e32 {d}, 0"]
    k = _log2(c)
    if k is not None:
        return [f"v_mov_b32_e32 {d}, {x}"] if k == 0 else [f"v_lshlrev_b32_e64 {d}, {k}, {x}"]
    forms = []
    bits = [b for b in range(32) if c >> b & 1]
    if len(bits) == 2:
        b, a = bits
        out = [f"v_lshl_add_u32 {d}, {x}, {a - b}, {x}"]
        forms.append(out + ([f"v_lshlrev_b32_e64 {d}, {b}, {d}"] if b else []))
    neg = (-c) & 0xFFFFFFFF
    if _log2(neg) is not None:
        forms.append([f"v_lshlrev_b32_e64 {d}, {_log2(neg)}, {x}", f"v_sub_u32_e64 {d}, 0, {d}"])
    low = (c & -c).bit_length() - 1          # c = 2^low * odd
    odd = c >> low
    w = tmp if d == x else d
    if _log2(odd + 1) is not None and w is not None:    # odd = 2^m - 1
        out = [f"v_lshlrev_b32_e64 {w}, {_log2(odd + 1)}, {x}", f"v_sub_u32_e64 {d}, {w}, {x}"]
        forms.append(out + ([f"v_lshlrev_b32_e64 {d}, {low}, {d}"] if low else []))
    return min(forms, key=len) if forms else None


def known_value(flow: Flow, i: int, op: str) -> tuple[str, int | str] | None:
    """("const", value) or ("pow2", shift operand) for SGPR ``op`` read at ``i``."""
    mask = R.operand_mask(op)
    if R.count(mask) != 1 or mask & R.VECTOR_MASK:
        return None
    defs, outside = reaching_writes(flow, i, mask)
    if outside or len(defs) != 1:
        return None
    (k,) = defs
    e = flow.cfg.effects[k]
    ops = [o.strip() for o in e.operands]
    if e.mnemonic in ("s_mov_b32", "s_movk_i32") and len(ops) == 2 and ops[0] == op:
        v = _int(ops[1])
        if v is None:
            return None
        if e.mnemonic == "s_movk_i32":
            v = (v & 0xFFFF) - (0x10000 if v & 0x8000 else 0)
        return "const", v
    if e.mnemonic == "s_lshl_b32" and len(ops) == 3 and ops[0] == op and _int(ops[1]) == 1:
        shift = ops[2]
        smask = R.operand_mask(shift)
        if smask and (smask & R.VECTOR_MASK or smask & mask):
            return None
        if smask and any(flow.cfg.effects[j].writes & smask for j in between(flow, k, i)):
            return None                   # the shift amount may change after the product
        return "pow2", shift
    return None


def reduce_at(flow: Flow, i: int, tmp: str | None) -> tuple[list[str], str] | str:
    """The replacement lines of multiply ``i`` and a note, or why there is none."""
    e = flow.cfg.effects[i]
    if e.modifiers or len(e.operands) != 3:
        return "modifiers or an unusual form"
    d, a, b = e.operands
    for x, y in ((a, b), (b, a)):
        if not R.operand_mask(x) or R.operand_mask(x) & R.AGPR_MASK:
            continue
        c = _int(y)
        kind = ("const", c) if c is not None else known_value(flow, i, y)
        if kind is None:
            continue
        if e.mnemonic == "v_mul_hi_u32":
            k = _log2(kind[1]) if kind[0] == "const" else None
            if k is None or k == 0:
                continue
            return [f"v_lshrrev_b32_e64 {d}, {32 - k}, {x}"], f"{e.text}: x*2^{k} >> 32"
        if kind[0] == "pow2":
            return [f"v_lshlrev_b32_e64 {d}, {kind[1]}, {x}"], f"{e.text}: {y} = 1 << {kind[1]}"
        lines = mul_lo_lines(d, x, kind[1], tmp)
        if lines is None:
            continue
        return lines, f"{e.text}: x*{kind[1]} as {len(lines)} full-rate op(s)"
    return f"{e.text!r}: no constant or power-of-two operand with a cheaper form"


@mutation("strength_reduce", targets=("amdgpu",))
class StrengthReduce(WindowedMutation):
    """Quarter-rate multiplies by known constants as shifts and adds (see the module doc)."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        sites = []
        for _, a, b in candidate_windows(context, individual, top=self.top_windows, min_len=1):
            sites += [i for i in range(a, b) if flow.cfg.effects[i].mnemonic in _MULS]
        if not sites:
            return context.reject("no 32-bit multiply in the hot blocks")
        return first_result(context, (("", self._seal(program, flow, i))
                                      for i in list(dict.fromkeys(sites))[:self.tries]))

    def _seal(self, program, flow: Flow, i: int):
        free = flow.live.free(i, i + 1, "v")
        tmp = f"v{(free & -free).bit_length() - 1 - R.VGPR_BASE}" if free else None
        got = reduce_at(flow, i, tmp)
        if isinstance(got, str):
            return got
        lines, note = got
        if 4 * len(lines) >= 16:
            return f"{flow.cfg.texts[i]!r}: the shift form is no cheaper"
        why = assembles(lines, program.source.target)
        if why:
            return why
        return seal(program, flow.fn.name, i, i + 1, lines, operator=self.name, note=note)
