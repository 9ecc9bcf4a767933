"""Classes wrong only at other launches of the family: what a buggy loop, tiling or
indexing operator gets wrong when it trusts the one launch it was shown.

* ``remainder``: the project's ``unroll`` operator applied, then its remainder path
  broken the way a buggy operator would: skipped (the guard's branch to the remainder
  retargeted to the exit) or run once (its back-branch dropped), so trip counts that
  leave a remainder (2^k - 1, 2^k + 1) lose iterations.
* ``partial_tile``: a per-lane bounds compare against a size scalar made always true
  (the scalar replaced by 0x7fffffff): right while every tile is whole.
* ``grid_dimension``: a workgroup id replaced by 0 in its first reader: right while
  the grid has one workgroup in that dimension.
* ``scalar_path``: a scalar that follows a size parameter replaced by its value at
  the size under check in its first comparison: right only at launches where the
  parameter has that value (no input set at the size under check moves it).
* ``index_overflow``: a 32-bit multiply in index arithmetic narrowed to
  ``v_mul_u32_u24`` (exact only while both operands are below 2^24, and unsigned).
  Counted wrong only where a family launch reaches that; else reported unreachable.
"""
from __future__ import annotations

import dataclasses
import random
import re

from asmevo.edits import Edit, label_of
from tests.verify.wrong.base import (Kernel, Probe, Wrong, first_reader, free_sgpr, readers,
                                     replace_source, scalar_registers, workgroup_id_sgprs)
from tests.verify.wrong.witness import member_probes, small_probe

FACTORS = (8, 4, 2)
VARIANTS = 6                # variants a class tries per kernel (the first shown wrong wins)


# -- remainder ------------------------------------------------------------------------------

def unrolled(k: Kernel, factor: int, seed: int = 0) -> Edit | None:
    """The project's ``unroll`` operator on K0 at ``factor`` (its own loop choice,
    deterministic for the seed), or None where it refuses."""
    from asmevo.operator import OperatorContext, Rejected, get_operator
    from asmevo.targets.amdgpu.edits import apply_edits
    prog = k.program

    class _Ind:
        edits = ()
    ctx = OperatorContext(k0=prog, kernel=k.spec.kernel, rng=random.Random(seed),
                          program_of=lambda ind: apply_edits(prog, ind.edits))
    e = get_operator("unroll", factors=(factor,)).mutate(_Ind(), ctx)
    return None if isinstance(e, Rejected) else e


def broken_remainder(edit: Edit, mode: str) -> Edit | None:
    """``edit`` (an unroll) with its remainder path skipped (``mode`` "skip": the guard's
    branch to it goes to the exit) or run at most once ("once": its back-branch gone)."""
    lines = list(edit.lines)
    labels = [j for j, t in enumerate(lines) if label_of(t)]
    if len(labels) < 2:
        return None
    rem, done = label_of(lines[labels[0]]), label_of(lines[labels[-1]])
    if mode == "skip":
        j = next((j for j, t in enumerate(lines[:labels[0]])
                  if t.startswith("s_cbranch") and t.split()[-1] == rem), None)
        if j is None:
            return None
        lines[j] = lines[j].replace(rem, done)
    else:
        j = labels[-1] - 1
        if not (lines[j].startswith("s_cbranch") and lines[j].split()[-1] == rem):
            return None
        del lines[j]
    return Edit(edit.function, edit.start, edit.end, tuple(lines), operator="unroll",
                note=f"{edit.note}, remainder {mode}")


def remainder(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    probes = member_probes(kernel)
    if not probes:
        return None
    variants = []
    for factor in FACTORS:
        e = unrolled(kernel, factor)
        if e is None:
            continue
        for mode in ("skip", "once"):
            if mode == "once" and factor == 2:
                continue            # a remainder of at most one: running it once is right
            b = broken_remainder(e, mode)
            if b is not None:
                variants.append(Wrong("remainder", (b,), f"#{e.start}: {b.note}", "launches",
                                      probes=probes))
    return pick(kernel, variants)


def pick(k: Kernel, variants: list[Wrong]) -> Wrong | None:
    """Of a class's variants, the first that builds, is bit-equal to K0 at the size
    under check (seed 0) and has a witness; else the first that builds and differs
    at the size under check; else the first that builds (the benchmark then lists it
    as not wrong)."""
    from asmevo.verify.evaluate import build_candidate
    from tests.verify.wrong.witness import witnessed
    first = at_small = None
    for w in variants:
        data, _ = build_candidate(k.ctx, w.edits)
        if data is None:
            continue
        first = first or w
        small = Wrong(w.cls, w.edits, w.note, "launches", probes=(small_probe(),))
        if witnessed(k.ctx, small, data):
            at_small = at_small or w
            continue
        if witnessed(k.ctx, w, data):
            return w
    if at_small is not None:
        return dataclasses.replace(at_small, probes=(small_probe(),) + at_small.probes)
    return first


# -- partial tile ---------------------------------------------------------------------------

def follows(k: Kernel, arg: str) -> tuple[str, ...]:
    """The family parameters the scalar argument ``arg``'s value expression names."""
    for raw in k.space.doc.get("args", []):
        if raw.get("name") == arg:
            v = raw.get("value")
            if isinstance(v, str):
                return tuple(n for n in k.space.family.names
                             if re.search(rf"\b{re.escape(n)}\b", v))
    return ()


def size_scalars(k: Kernel) -> list[tuple[str, int, int, tuple[str, ...]]]:
    """(argument, SGPR, its s_load, parameters it follows) for int scalars that follow
    a family parameter, those without a domain first (no input set at the size under
    check moves them)."""
    by_name = {a.name: a for a in k.spec.args}
    out = []
    for name, r, load in scalar_registers(k.fn, k.kd, k.slots):
        a = by_name.get(name)
        params = follows(k, name)
        if a is None or a.dtype not in ("int32", "uint32") or not params:
            continue
        out.append((name, r, load, params, a.domain is not None))
    out.sort(key=lambda x: x[4])
    return [x[:4] for x in out]


def _with_literal(k: Kernel, idx: int, reg: int, lit: int) -> tuple[str, ...] | None:
    """Instruction ``idx`` reading ``lit`` instead of s<reg>: in place where a literal
    may stand there (a VOP2/VOPC/SOP source), else through a free SGPR."""
    t = k.fn.instructions[idx].text
    m = k.fn.instructions[idx].mnemonic
    ops = [o.strip() for o in k.fn.instructions[idx].operands.split(",")]
    src0 = ops[1] if (m.startswith("v_") and not m.startswith("v_cmpx")) else ops[0]
    others = [o for o in ops if o != f"s{reg}"]
    if not any(_literal(o) for o in others) and (
            m.startswith("s_") or ("_e64" not in m and src0 == f"s{reg}")):
        return (replace_source(t, f"s{reg}", f"0x{lit & 0xFFFFFFFF:x}"),)
    f = free_sgpr(k.fn)
    if f is None:
        return None
    return (f"s_mov_b32 s{f}, 0x{lit & 0xFFFFFFFF:x}", replace_source(t, f"s{reg}", f"s{f}"))


def _literal(op: str) -> bool:
    """A 32-bit literal operand (not an inline constant, -16..64)."""
    try:
        v = int(op, 0)
    except ValueError:
        return False
    return not -16 <= v <= 64


def partial_tile(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    variants = []
    for name, r, load, params in size_scalars(kernel):
        for idx in readers(fn, r, load):
            ins = fn.instructions[idx]
            if not ins.mnemonic.startswith("v_cmp_") or ins.mnemonic.startswith("v_cmpx"):
                continue
            lines = _with_literal(kernel, idx, r, 0x7FFFFFFF)
            if lines is None:
                continue
            probes = (small_probe(),) + member_probes(kernel, only=params)
            variants.append(Wrong("partial_tile", (Edit(fn.name, idx, idx + 1, lines),),
                                  f"#{idx}: bound {name} (s{r}) -> 0x7fffffff in "
                                  f"{ins.mnemonic}", "launches", probes=probes))
    return pick(kernel, variants[:VARIANTS])


# -- grid dimension -------------------------------------------------------------------------

def grid_dimension(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    """The workgroup id of one grid dimension (one whose size under check has a single
    workgroup first) read as 0 everywhere: ``s_mov_b32 s<id>, 0`` at the kernel's
    entry, as if the kernel ignored ``blockIdx`` there."""
    ids = workgroup_id_sgprs(kernel.kd)
    order = sorted(ids, key=lambda d: (spec.grid[d] != 1, d))
    for d in order:
        r = ids[d]
        if first_reader(fn, r, -1) is None:
            continue
        probes = member_probes(kernel, grid_dim=d)
        if not probes or not any(_grid(kernel, p)[d] >= 2 for p in probes):
            continue
        return Wrong("grid_dimension", (Edit(fn.name, 0, 0, (f"s_mov_b32 s{r}, 0",)),),
                     f"workgroup id {'xyz'[d]} (s{r}) read as 0 (grid {spec.grid} at the size "
                     f"under check)", "launches", probes=(small_probe(),) + probes)
    return None


def _grid(k: Kernel, p: Probe) -> tuple:
    return k.space.grid({**k.space.base, **dict(p.member)}) or (0, 0, 0)


# -- scalar path ----------------------------------------------------------------------------

def scalar_path(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    """A comparison reading a scalar that follows a size parameter (else another
    reader) takes the scalar's value at the size under check as a literal; the first
    such variant a family member shows wrong."""
    by_name = {a.name: a for a in spec.args}
    variants = []
    for name, r, load, params in size_scalars(kernel):
        rd = readers(fn, r, load)
        cmps = [i for i in rd if fn.instructions[i].mnemonic.startswith(("v_cmp", "s_cmp"))]
        probes = member_probes(kernel, only=params)
        if not probes:
            continue
        for idx in cmps + [i for i in rd if i not in cmps]:
            lines = _with_literal(kernel, idx, r, int(by_name[name].value))
            if lines is None:
                continue
            variants.append(Wrong("scalar_path", (Edit(fn.name, idx, idx + 1, lines),),
                                  f"#{idx}: {name} (s{r}, follows {','.join(params)}) -> "
                                  f"{int(by_name[name].value)} in "
                                  f"{fn.instructions[idx].mnemonic}", "launches",
                                  probes=probes))
    return pick(kernel, variants[:VARIANTS])


# -- 24/32-bit index overflow -------------------------------------------------------------

_MUL = re.compile(r"v_mul_lo_u32 (v\d+), ([sv]\d+|0x[0-9a-f]+|\d+), ([sv]\d+|0x[0-9a-f]+|\d+)$")


def index_overflow(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    """The first ``v_mul_lo_u32`` of index arithmetic (not one of a division's magic-
    number multiplies, which sit beside ``v_mul_hi_u32``) narrowed to 24 bits."""
    ins = fn.instructions
    for idx, i in enumerate(ins):
        m = _MUL.match(i.text)
        if not m:
            continue
        near = ins[max(0, idx - 3):idx + 4]
        if any(x.mnemonic.startswith(("v_mul_hi", "v_cvt_f32_u32", "v_rcp")) for x in near):
            continue
        d, a, b = m.groups()
        if a.startswith("0x") or b.startswith("0x") or not feeds_address(fn, idx):
            continue
        new = f"v_mul_u32_u24_e64 {d}, {a}, {b}"
        return Wrong("index_overflow", (Edit(fn.name, idx, idx + 1, (new,)),),
                     f"#{idx}: {i.text} -> {new}", "launches",
                     probes=(small_probe(),) + far_probes(kernel))
    return None


def feeds_address(fn, idx: int, horizon: int = 48) -> bool:
    """Whether the value instruction ``idx`` defines reaches a memory access's address
    (forward along the instruction list, within ``horizon`` instructions): index
    arithmetic, not value arithmetic (a hash's multiply)."""
    from asmevo.targets.amdgpu.analysis import regs as R
    from asmevo.targets.amdgpu.analysis.effects import effects
    ins = fn.instructions
    taint = effects(ins[idx].text).writes & R.VECTOR_MASK
    for i in ins[idx + 1:idx + 1 + horizon]:
        e = effects(i.text)
        if e.mem and e.addr and R.operand_mask(e.addr) & taint:
            return True
        if e.reads & taint and not e.mem_store:
            taint |= e.writes
        elif e.writes & taint:
            taint &= ~e.kills
        if not taint:
            return False
    return False


def far_probes(k: Kernel, cost: float = 64.0) -> tuple[Probe, ...]:
    """Family members at the far end of each parameter (the others at the size under
    check; the far end brought down where the launch's parameter product would exceed
    ``cost`` times the size under check's), and every parameter at its high end where
    that fits too: where index arithmetic is largest."""
    import numpy as np
    space = k.space
    fam = space.family
    base = {n: space.base[n] for n in fam.names}
    cap = cost * float(np.prod([max(1, abs(v)) for v in base.values()]))
    out = []
    tries = []
    for r in fam.ranges:
        hi = max(r.values) if r.values else r.high
        other = float(np.prod([max(1, abs(v)) for n, v in base.items() if n != r.name]))
        if not r.values:
            hi = min(hi, max(r.low, int(cap / max(other, 1.0)) // r.multiple * r.multiple))
        tries.append({**base, r.name: hi})
    tries.append({n: max(v[n] for v in tries) for n in fam.names})
    for values in tries:
        full = {**space.base, **values}
        if float(np.prod([max(1, abs(v)) for v in values.values()])) > cap or \
                space.grid(full) is None or fam.outside(full) is not None:
            continue
        key = tuple((n, values[n]) for n in fam.names)
        label = ",".join(f"{n}={v}" for n, v in key)
        p = Probe(f"{label} (the family's far end within {cost:g}x the size under check)", key)
        if p not in out and key != tuple(base.items()):
            out.append(p)
    return tuple(out)
