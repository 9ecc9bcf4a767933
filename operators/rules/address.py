"""``address_fold``: keep 64-bit global addresses in SGPR + offset form.

Two exact rewrites of a ``global_*`` access whose 64-bit VGPR address ``v[a:a+1]``
has exactly one reaching write ``D``:

- **saddr**: ``D = v_lshl_add_u64 v[a:a+1], s[b:b+1], 0, v[L:L+1]`` (either order) where
  ``v(L+1)``'s only reaching write is ``v_mov_b32 v(L+1), 0``: the address is
  ``s[b:b+1] + zext(vL)``, which is what the saddr form computes from voffset
  ``vL`` and saddr ``s[b:b+1]``. The access becomes ``global_op ..., vL, s[b:b+1]``.
- **offset**: ``D = v_lshl_add_u64 v[a:a+1], v[y:y+1], 0, C`` with ``C`` a constant: the
  access reads ``v[y:y+1]`` with ``C`` added to its immediate offset, while the sum
  fits the signed 13-bit field. (64-bit addition modulo 2^64 is associative.)

Both need, on every path from ``D`` (and from the ``v_mov``) to the access: no
write of the registers the new form reads and no EXEC write (the access's lanes
are lanes ``D`` wrote), and ``D`` not reading what it writes. Every access through
``D`` is rewritten; then ``D`` and the ``v_mov``, and whatever else the rewrite left
dead, are deleted (lane-aware, :mod:`asmevo.operators.rules.dce`), all in one proposal.

Why faster: the 64-bit VALU adds (and the zero move) per address disappear; the
address unit adds the SGPR base and the offset itself.
"""
from __future__ import annotations

import re

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.program import Instruction
from asmevo.operator import OperatorContext, mutation
from asmevo.operators.rules.dce import dead_to_fixed_point
from asmevo.operators.rules.structure import (Flow, StructuralMutation, assembles, between, first_result,
                                       parts, reaching_writes, render, seal_edits)

OFFSET_MIN, OFFSET_MAX = -4096, 4095       # gfx9 global/scratch: signed 13-bit
_PAIR = re.compile(r"^([sv])\[(\d+):(\d+)\]$")


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _pair(text: str, kind: str) -> int | None:
    m = _PAIR.match(text)
    if m and m.group(1) == kind and int(m.group(3)) == int(m.group(2)) + 1:
        return int(m.group(2))
    return None


def _unique_def(flow: Flow, i: int, mask: int) -> int | None:
    defs, outside = reaching_writes(flow, i, mask)
    if outside or len(defs) != 1:
        return None
    (d,) = defs
    return d if flow.cfg.effects[d].writes & mask == mask else None


def _clean(flow: Flow, d: int, i: int, reads: int) -> bool:
    """Nothing on a path from ``d`` to ``i`` writes ``reads`` or EXEC."""
    guard = reads | R.EXEC_MASK
    return not any(flow.cfg.effects[k].writes & guard for k in between(flow, d, i))


def vaddr_of(text: str) -> tuple[list[str], list[str], str, int] | None:
    """(operands, modifiers, mnemonic, index of the 64-bit vaddr) of an ``off``-form global op."""
    got = parts(text)
    if got is None:
        return None
    m, ops, mods = got
    if not m.startswith("global_") or "off" not in ops:
        return None
    load = "_load_" in m or ("_atomic_" in m and "sc0" in mods) or \
        ("_atomic_" in m and "glc" in mods)
    k = 1 if load else 0
    if len(ops) <= k or _pair(ops[k], "v") is None or ops[-1] != "off":
        return None
    return ops, mods, m, k


def fold(flow: Flow, i: int) -> tuple[int, str, list[int]] | None:
    """(def index, new text of access ``i``, extra defs to delete) or None."""
    got = vaddr_of(flow.cfg.texts[i])
    if got is None:
        return None
    ops, mods, m, k = got
    a = _pair(ops[k], "v")
    amask = R.operand_mask(ops[k])
    d = _unique_def(flow, i, amask)
    if d is None:
        return None
    e = flow.cfg.effects[d]
    dops = [o.strip() for o in e.operands]
    if e.mnemonic != "v_lshl_add_u64" or len(dops) != 4 or _pair(dops[0], "v") != a \
            or dops[2] != "0" or e.reads & e.writes & ~R.EXEC_MASK or e.modifiers:
        return None
    x, y = dops[1], dops[3]
    for base, low in ((x, y), (y, x)):
        s = _pair(base, "s")
        lo = _pair(low, "v")
        if s is not None and lo is not None:
            hi = R.operand_mask(f"v{lo + 1}")
            z = _unique_def(flow, d, hi)
            if z is None or flow.cfg.texts[z] != f"v_mov_b32_e32 v{lo + 1}, 0":
                continue
            if not (_clean(flow, z, d, 0) and _clean(flow, d, i, R.operand_mask(base)
                                                    | R.operand_mask(f"v{lo}"))):
                continue
            new = list(ops)
            new[k] = f"v{lo}"
            new[-1] = base
            return d, render(m, new, mods), [z]
    for vec, const in ((x, y), (y, x)):
        c = _int(const)
        if c is None or _pair(vec, "v") is None:
            continue
        old = next((int(w[7:], 0) for w in mods if w.startswith("offset:")), 0)
        if not OFFSET_MIN <= old + c <= OFFSET_MAX:
            continue
        if not _clean(flow, d, i, R.operand_mask(vec)):
            continue
        new = list(ops)
        new[k] = vec
        nmods = [w for w in mods if not w.startswith("offset:")]
        if old + c:
            nmods.append(f"offset:{old + c}")
        return d, render(m, new, nmods), []
    return None


@mutation("address_fold", targets=("amdgpu",))
class AddressFold(StructuralMutation):
    """SGPR base + 32-bit offset (saddr) or immediate-offset forms of global addresses."""

    def mutate(self, individual, context: OperatorContext):
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        by_def: dict[int, dict[int, str]] = {}
        for i in range(flow.cfg.n):
            got = fold(flow, i) if flow.cfg.reachable[flow.cfg.block_of[i]] else None
            if got is not None:
                by_def.setdefault(got[0], {})[i] = got[1]
        if not by_def:
            return context.reject("no global access through a foldable 64-bit address")
        defs = list(by_def)
        context.rng.shuffle(defs)
        return first_result(context, (("", self._propose(program, flow, d, by_def[d],
                                                          program.source.target))
                                      for d in defs[:self.tries]))

    def _propose(self, program, flow: Flow, d: int, rewritten: dict[int, str], target):
        why = assembles(list(rewritten.values()), target)
        if why:
            return why
        fn = flow.fn
        new = program
        for i, text in rewritten.items():
            new = new.replace_window(fn.name, i, i + 1, [Instruction(text=text)])
        gone = dead_to_fixed_point(new, fn.name)
        if d not in gone:
            return f"{flow.cfg.texts[d]!r} is still read after the rewrite"
        cfg = flow.cfg
        windows = []
        for b in cfg.blocks:
            idx = range(b.start, b.end)
            if any(k in gone or k in rewritten for k in idx):
                windows.append((b.start, b.end, [rewritten.get(k, cfg.texts[k]) for k in idx
                                                 if k not in gone]))
        note = (f"{len(rewritten)} access(es) through {cfg.texts[d]} rewritten, "
                f"{len(gone)} instruction(s) deleted")
        return seal_edits(program, fn.name, windows, operator=self.name, note=note)
