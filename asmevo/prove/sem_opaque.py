"""Lane-local vector instructions without an exact row, as uninterpreted functions.

``v_exp_f32`` is a family of functions (:mod:`asmevo.emu.numerics.approx`), ``v_div_scale``
and the packed, mixed-precision and scaled-conversion rows are exact but long; what
a proof about a reordering, a renaming or a deleted copy needs of them is only that
the same instruction on the same inputs gives the same result. Each such
instruction is modeled as one uninterpreted function per written register of
*everything it may read*: its source operands' registers at the lane, its old
destination where it writes only part of it and the implicit registers its effects
name (VCC's bit of the lane for ``v_div_fmas``); constants and modifiers are part of the function's
name. The lane's index is not an input: lane-local means the same inputs give the
same result in every lane (a value every lane computes alike stays one term). Its results are written where EXEC has the lane on; a
carry-out or VCC result is one bit per lane, written with inactive lanes 0.

Soundness rests on that claim about the emulator, which the emulator check tests
for every such instruction (:func:`asmevo.prove.check.check_opaque`): two states
that agree on the inputs at a lane give the same outputs there, the same inputs in
another lane give the same outputs in that lane, inactive lanes and every other
register are left alone. Cross-lane instructions (DPP, permutes,
MFMA), EXEC writers and memory instructions are never opaque.
"""
from __future__ import annotations

import re

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.lanes import cross_lane
from asmevo.prove import operand as O
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import EXEC, VCC, Machine
from asmevo.prove.sem_vector import lane_mask_write
from asmevo.prove.term import b2bv
from asmevo.prove.z3env import z3

_REG = re.compile(r"(?<![\w.])([sva]|ttmp)(?:\[(\d+):(\d+)\]|(\d+))(?![\w])")
OPAQUE_PREFIX = "op:"


def canonical(text: str) -> str:
    """The text with each register replaced by its kind and count: the function's name."""
    def sub(mt):
        n = 1 if mt.group(4) is not None else int(mt.group(3)) - int(mt.group(2)) + 1
        return f"{'s' if mt.group(1) == 'ttmp' else mt.group(1)}#{n}"
    return _REG.sub(sub, " ".join(text.split()))


def opaque_plan(ins) -> dict:
    """What the function of ``ins`` reads and writes, or Unsupported with the reason."""
    e = effects(ins.text)
    if not ins.base.startswith("v_"):
        raise Unsupported(ins.text, "no semantics for this instruction")
    if e.unknown or e.klass not in ("VALU", "VALU_TRANS", "DOT") or e.mem:
        raise Unsupported(ins.text, "not a lane-local vector instruction")
    if cross_lane(e) or e.writes & R.EXEC_MASK or ins.base.startswith(("v_cmp", "v_movrel")):
        raise Unsupported(ins.text, "reads other lanes or writes EXEC")
    if not _emulated(ins):
        raise Unsupported(ins.text, "the emulator does not execute it")
    ops = ins.ops
    ndefs = e.ndefs
    if ndefs < 1 or ops[0].kind != "v":
        raise Unsupported(ins.text, "no vector destination")
    vdst = [ops[0].reg + k for k in range(ops[0].count)]
    sdst = None
    if ndefs == 2:
        if ops[1].kind != "s" or ops[1].count != 2:
            raise Unsupported(ins.text, f"second destination {ops[1].text}")
        sdst = ops[1].reg
    named = 0
    for mk in e.op_masks:
        named |= mk
    implicit = [r for r in range(128) if (e.reads >> r) & 1 and not (named >> r) & 1
                and r not in (EXEC, EXEC + 1)]
    dmask = e.op_masks[0]
    lowest = (dmask & -dmask).bit_length() - 1
    implicit_dst = e.reads & dmask & ~_source_mask(e, ndefs)     # partial writes keep the rest
    kept = [ops[0].reg + b - lowest for b in range(lowest, dmask.bit_length())
            if (implicit_dst >> b) & 1]
    return {"key": canonical(ins.text), "vdst": vdst, "kept": kept, "sdst": sdst,
            "srcs": ops[ndefs:], "implicit": implicit, "scc": bool(e.reads & R.SCC_MASK)}


def _source_mask(e, ndefs: int) -> int:
    m = 0
    for mk in e.op_masks[ndefs:]:
        m |= mk
    return m


def _emulated(ins) -> bool:
    from asmevo.emu.isa.decode import decode_one
    d = decode_one(ins.text, index=0, address=None, kernel=None, accum_offset=0,
                   processor=ins.processor)
    return d.ctl == "op" and d.error is None


def opaque_args(m: Machine, ins, plan: dict) -> list:
    args = []
    for op in plan["srcs"]:
        if op.kind == "v":
            args += [m.vuse(op.reg + k) for k in range(op.count)]
        elif op.kind == "s":
            args += [m.sget(op.reg + k) for k in range(op.count)]
        elif op.kind == "special":
            args.append(O.raw(m, op, 32, False, text=ins.text))
        elif op.kind not in ("const", "off"):
            raise Unsupported(ins.text, f"operand {op.text}")
    args += [m.vuse(r) for r in plan["kept"]]
    implicit = plan["implicit"]
    if VCC in implicit and VCC + 1 in implicit:     # a lane mask (v_div_fmas): its bit
        args.append(b2bv(m.bit(m.sget64(VCC))))
        implicit = [r for r in implicit if r not in (VCC, VCC + 1)]
    args += [m.sget(r) for r in implicit]
    if plan["scc"]:
        args.append(b2bv(m.scc))
    return args


def opaque(ins):
    """The semantics function of ``ins`` as uninterpreted functions."""
    plan = opaque_plan(ins)

    def run(m: Machine, ins) -> None:
        args = opaque_args(m, ins, plan)
        dom = tuple(a.sort() for a in args)
        # the arity names the function too: a form whose destination is also a source
        # reads it once, as that source
        name = f"{OPAQUE_PREFIX}{m.ctx.mode}:{plan['key']}/{len(args)}"
        outs = [m.ctx.uf(f"{name}#{j}", dom, z3.BitVecSort(32), kind="opaque")(*args)
                for j in range(len(plan["vdst"]))]
        bit = None
        if plan["sdst"] is not None:
            bit = m.ctx.uf(f"{name}#sdst", dom, z3.BoolSort(), kind="opaque")(*args)
        for r, val in zip(plan["vdst"], outs):
            m.vwrite(r, val)
        if bit is not None:
            lane_mask_write(m, plan["sdst"], bit)
    return run
