"""The generic vector ALU row: :mod:`asmevo.emu.isa.valu`'s ``build`` on terms.

Every integer row of :data:`asmevo.prove.sem_vector.INT` and float row of
:data:`asmevo.prove.sem_float.FLOAT` runs through :func:`build`: sources with DPP
and op_sel, the accumulating forms (the destination is also the last source),
clamp as saturation for integers, the float path (:func:`~asmevo.prove.sem_float.compute`)
and the EXEC-masked write.
"""
from __future__ import annotations

from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import Machine
from asmevo.prove.rows import register
from asmevo.prove.sem_float import FLOAT, compute
from asmevo.prove.sem_vector import INT, SATURATE, saturated
from asmevo.prove.term import zext
from asmevo.prove.z3env import z3

ACCUM = {"v_mac_f32": "v_mad_f32", "v_fmac_f32": "v_fma_f32", "v_fmac_f64": "v_fma_f64"}


def build(m: Machine, ins, name: str | None = None, row=None) -> None:
    """The generic VOP1/VOP2/VOP3 row (valu.build): integer rows here, float rows
    through :func:`asmevo.prove.sem_float.compute`."""
    name = name or ins.base
    accum = name in ACCUM
    if accum:
        name = ACCUM[name]
    dst_t, src_ts, fn = row if row is not None else (INT.get(name) or FLOAT[name])
    ops = ins.ops
    if name == "v_mov_b32" and any(o.neg or o.abs for o in ops[1:2]):
        src_ts = ("f32",)
    srcs = ops[1:1 + len(src_ts)] if not accum else ops[1:] + [ops[0]]
    if len(srcs) != len(src_ts):
        raise Unsupported(ins.text, f"expected {len(src_ts)} sources, got {len(srcs)}")
    dpp = O.Dpp(ins) if ins.encoding == "dpp" else None
    args, enable = [], None
    for i, (o, t) in enumerate(zip(srcs, src_ts)):
        x, en = O.source(m, ins, o, t, i, dpp)
        args.append(x)
        enable = en if en is not None else enable
    clamp = bool(ins.mods.get("clamp"))
    if clamp and dst_t[0] != "f" and name not in SATURATE:
        raise Unsupported(ins.text, "integer clamp")
    is_float = dst_t[0] == "f" or any(t[0] == "f" for t in src_ts)
    if name == "v_mov_b32" and src_ts == ("f32",):
        res = args[0]
    elif is_float:
        res = compute(m, ins, name, dst_t, src_ts, fn, args)
    elif clamp:
        res = saturated(name, args)
    else:
        res = z3.simplify(fn(*args))       # integer results: one normal form for both sides
    O.write(m, ins, ops[0], dst_t, _fit(res, int(dst_t[1:])), enable)


def _fit(res, w: int):
    return z3.Extract(w - 1, 0, res) if res.size() > w else zext(res, w)


@register(*INT, *FLOAT, *ACCUM)
def _generic(m: Machine, ins) -> None:
    build(m, ins)


@register("v_accvgpr_read_b32", "v_accvgpr_write_b32", "v_accvgpr_mov_b32")
def _accmov(m: Machine, ins) -> None:
    build(m, ins, "v_mov_b32")
