"""The operators programs are built from: arity, which types they apply to, and the
C++ each renders to (helpers from prelude.h).

One table serves the generator (what may be applied to which type) and the
renderer (what text it becomes), so the two cannot drift apart. ``{0}``..``{2}``
are the rendered operands, ``{T}`` the C++ result type, ``{F}`` the first
operand's C++ type.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    name: str
    arity: int
    kind: str           # int | float | cmp | bool | select | conv | bits | gather
    template: str
    signed_only: bool = False   # integer ops that only make sense on signed types


def _ops(kind: str, arity: int, table: dict[str, str], **kw) -> dict[str, Op]:
    return {n: Op(n, arity, kind, t, **kw) for n, t in table.items()}


OPS: dict[str, Op] = {}
OPS.update(_ops("int", 2, {
    "add": "w_add({0}, {1})", "sub": "w_sub({0}, {1})", "mul": "w_mul({0}, {1})",
    "and": "({T})({0} & {1})", "or": "({T})({0} | {1})", "xor": "({T})({0} ^ {1})",
    "shl": "w_shl({0}, {1})", "shr": "w_shr({0}, {1})",
    "div": "w_div({0}, {1})", "rem": "w_rem({0}, {1})",
    # by a constant (the generator never picks 0, nor -1 for signed 32/64-bit):
    # the compiler's magic-number division and remainder
    "divc": "({T})({0} / {1})", "remc": "({T})({0} % {1})",
    "mulhi": "w_mulhi({0}, {1})", "min": "w_imin({0}, {1})", "max": "w_imax({0}, {1})"}))
OPS.update(_ops("int", 1, {"neg": "w_neg({0})", "not": "({T})~{0}", "popc": "w_popc({0})",
                           "clz": "w_clz({0})", "ctz": "w_ctz({0})"}))
OPS.update(_ops("int", 1, {"abs": "w_abs({0})"}, signed_only=True))
OPS.update(_ops("float", 2, {
    "fadd": "({T})({0} + {1})", "fsub": "({T})({0} - {1})", "fmul": "({T})({0} * {1})",
    "fdiv": "({T})({0} / {1})", "fmin": "w_fmin({0}, {1})", "fmax": "w_fmax({0}, {1})",
    "copysign": "w_copysign({0}, {1})"}))
OPS.update(_ops("float", 1, {
    "fneg": "(-{0})", "fabs": "w_fabs({0})", "sqrt": "w_sqrt({0})", "floor": "w_floor({0})",
    "ceil": "w_ceil({0})", "trunc": "w_trunc({0})", "rint": "w_rint({0})"}))
OPS["fma"] = Op("fma", 3, "float", "w_fma({0}, {1}, {2})")
OPS.update(_ops("cmp", 2, {"lt": "({0} < {1})", "le": "({0} <= {1})", "gt": "({0} > {1})",
                           "ge": "({0} >= {1})", "eq": "({0} == {1})", "ne": "({0} != {1})"}))
OPS.update(_ops("bool", 2, {"land": "({0} && {1})", "lor": "({0} || {1})"}))
OPS["lnot"] = Op("lnot", 1, "bool", "(!{0})")
OPS["select"] = Op("select", 3, "select", "({0} ? {1} : {2})")
OPS["conv"] = Op("conv", 1, "conv", "w_conv<{T}>({0})")
OPS["bits"] = Op("bits", 1, "bits", "w_bits<{T}>({0})")
OPS["nbits"] = Op("nbits", 1, "bits", "w_nbits<{T}>({0})")
OPS["gather"] = Op("gather", 1, "gather", "in{v}[w_gix({0}, n)]")

# Sources whose value no float operation produced: their NaNs have fixed bits, so a
# copysign may take their sign and a bit cast may read them unchanged.
RAW_SOURCES = {"load", "gather", "scalar", "const"}
