"""``trim_registers``: give back register granules the code does not need.

Two edits, whichever applies first:

1. **Trim the descriptor.** The rebuild keeps ``max(descriptor, what the code
   uses)``, so a kernel whose descriptor asks for more VGPR/SGPR granules than
   its code needs keeps them. This edit sets ``granulated_workitem_vgpr_count`` /
   ``granulated_wavefront_sgpr_count`` (``Edit.descriptor``) down to the need,
   with an empty code window (``start == end == 0``, no lines); on gfx90a/gfx942
   it lowers ``accum_offset`` (where AGPRs start) to the VGPRs in use as well,
   since the offset floors the allocation. The need counts
   what the hardware itself writes at launch (user and system SGPRs, the
   work-item ID VGPRs), and always 6 extra SGPRs (VCC, FLAT_SCRATCH, XNACK_MASK:
   the most GFX9 allocates on top), so it never under-allocates.
2. **Rename down to lower the peak.** When the kernel is VGPR-limited, the
   registers at or above the next occupancy threshold (see
   :func:`asmevo.targets.amdgpu.occupancy.occupancy`: 512 VGPRs per SIMD lane on
   gfx90a/gfx942 in granules of 8, so 8 waves need <= 64, 7 need <= 72, ...)
   are renamed, inside one basic block, into registers free across that whole
   block. Only registers whose every live range lies inside that block (live
   neither into nor out of it) are renamed, every occurrence in the block at
   once, tuples kept together and 64-bit aligned. The ``Edit`` model replaces
   one window, so a register used in several blocks takes several edits (one
   per block, each sound on its own); the edit that removes the last use above
   the threshold also lowers the descriptor.

Preserves: every instruction computes the same values; only register names of
block-local values change, into registers nothing else holds there. Waits and
hazards are re-checked (and padded) by :func:`asmevo.operators.rules.common.seal`.

Why it can be faster: waves per SIMD are ``512 // allocated VGPRs`` (capped
at 8); one more resident wave hides more memory latency when the grid has
enough workgroups to fill the CUs. On a small launch (fewer workgroups than
CUs) the modeled time does not change, and that is reported honestly.
"""
from __future__ import annotations

import re
from dataclasses import replace

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.program import Function, Program
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import Refuse, seal
from asmevo.operators.rules.registers import (fmt_range, needed_granules, next_threshold, reg_bit,
                                              vgpr_trim)

_RANGE = re.compile(r"(?<![\w.])([sva])(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
def trim_edit(fn: Function, program: Program, operator: str) -> Edit | Rejected:
    """The descriptor-only edit lowering granules (and on gfx90a+ the AGPR offset) to
    the need, or why there is none."""
    kd = fn.kernel.descriptor
    g_v, g_s = needed_granules(fn, program)
    change = vgpr_trim(fn, program, g_v)
    if g_s < kd.granulated_wavefront_sgpr_count:
        change["granulated_wavefront_sgpr_count"] = g_s
    if not change:
        return Rejected("the descriptor already asks for no more than the code needs")
    note = ", ".join(_say(k, getattr(kd, k), v) for k, v in sorted(change.items()))
    return Edit(fn.name, 0, 0, (), operator=operator, note=f"trim {note}",
                descriptor=tuple(sorted(change.items())))


def _say(field: str, old: int, new: int) -> str:
    if field == "accum_offset_field":
        return f"accum_offset {(old + 1) * 4} -> {(new + 1) * 4}"
    return f"{field.split('_')[1]} granule {old} -> {new}"


# --- renaming down -------------------------------------------------------------------------

def _ranges(text: str, kind: str):
    e = effects(text)
    for k, op in enumerate(e.operands):
        for m in _RANGE.finditer(op):
            if m.group(1) != kind:
                continue
            if m.group(4) is not None:
                yield k, int(m.group(4)), int(m.group(4))
            else:
                first = int(m.group(2))
                yield k, first, int(m.group(3)) if m.group(3) is not None else first


def rename_all(text: str, mapping: dict[int, int], kind: str) -> str:
    """``text`` with every operand naming a register of ``mapping`` renamed (defs too)."""
    e = effects(text)
    mask = 0
    for r in mapping:
        mask |= reg_bit(kind, r)
    if not (e.reads | e.writes) & mask:
        return text
    named = 0
    for m in e.op_masks:
        named |= m
    if e.unknown or (e.reads | e.writes) & mask & ~named:
        raise Refuse(f"touches a renamed register without naming it: {text}")

    def sub(m: re.Match) -> str:
        if m.group(1) != kind:
            return m.group(0)
        first = int(m.group(4) if m.group(4) is not None else m.group(2))
        last = first if m.group(4) is not None or m.group(3) is None else int(m.group(3))
        regs = range(first, last + 1)
        hit = [r in mapping for r in regs]
        if not any(hit):
            return m.group(0)
        if not all(hit):
            raise Refuse(f"a tuple is only partly renamed in {text}")
        return fmt_range(kind, mapping[first], last - first + 1)

    ops = [_RANGE.sub(sub, op) for op in e.operands]
    out = e.mnemonic + (" " + ", ".join(ops) if ops else "")
    if e.modifiers:
        out += " " + " ".join(e.modifiers)
    return out


def groups(texts: list[str], regs: set[int], kind: str) -> list[tuple[int, int, bool]]:
    """Contiguous spans ``(first, last, has_tuple)`` that must move together:
    registers of ``regs`` joined by a tuple operand. A tuple reaching outside
    ``regs`` makes a rename impossible."""
    parent = {r: r for r in regs}

    def find(r):
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    tuples = set()
    for t in texts:
        for _, first, last in _ranges(t, kind):
            span = set(range(first, last + 1))
            if not span & regs:
                continue
            if not span <= regs:
                raise Refuse(f"{fmt_range(kind, first, last - first + 1)} mixes renamed "
                             "and kept registers")
            for r in span:
                parent[find(r)] = find(first)
            if last > first:
                tuples.add(first)
    spans: dict[int, list[int]] = {}
    for r in regs:
        spans.setdefault(find(r), []).append(r)
    out = []
    for members in spans.values():
        lo, hi = min(members), max(members)
        out.append((lo, hi, any(lo <= t <= hi for t in tuples)))
    return sorted(out)


def rename_block(fn: Function, live: Liveness, cfg, bi: int, high: set[int],
                 limit: int) -> tuple[list[str], dict[int, int]]:
    """New lines of block ``bi`` with its occurrences of ``high`` (VGPRs) renamed
    below ``limit``; raises Refuse."""
    b = cfg.blocks[bi]
    texts = cfg.texts[b.start:b.end]
    mask = 0
    for r in high:
        mask |= reg_bit("v", r)
    if (live.live_in[bi] | live.live_out[bi]) & mask:
        raise Refuse("a register above the threshold lives across the block boundary")
    free = live.free(b.start, b.end, "v")
    spans = groups(texts, high, "v")
    taken: set[int] = set()
    mapping: dict[int, int] = {}
    for lo, hi, tup in sorted(spans, key=lambda s: -(s[1] - s[0])):
        n = hi - lo + 1
        for s in range(limit - n + 1):
            if tup and (s - lo) % 2:
                continue
            regs = range(s, s + n)
            if all(free & reg_bit("v", r) and r not in taken for r in regs):
                taken.update(regs)
                mapping.update({lo + k: s + k for k in range(n)})
                break
        else:
            raise Refuse(f"no free {fmt_range('v', 0, n).replace('0', '?')} below v{limit}")
    return [rename_all(t, mapping, "v") for t in texts], mapping


@mutation("trim_registers", targets=("amdgpu",))
class TrimRegisters:
    """Lower the descriptor's register granules to the need, or rename the registers
    above the next occupancy threshold into lower free ones (see the module doc)."""

    def __init__(self, tries: int = 8):
        if tries < 1:
            raise ValueError("tries must be >= 1")
        self.tries = tries

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        if fn.kernel is None:
            return context.reject("not a kernel: no descriptor")
        trimmed = trim_edit(fn, program, self.name)
        if isinstance(trimmed, Edit):
            return trimmed
        reasons = [trimmed.reason]
        limit = next_threshold(fn, program)
        if limit is None:
            return context.reject(f"{trimmed}; occupancy is not VGPR-limited (or at its cap)")
        used = fn.register_usage()
        if used.agprs:
            return context.reject(f"{trimmed}; AGPRs in use: they sit above accum_offset "
                                  "and count towards the allocation")
        high = set(range(limit, used.vgprs))
        cfg = build_cfg(fn)
        live = Liveness(fn, cfg)
        hmask = 0
        for r in high:
            hmask |= reg_bit("v", r)
        blocks = [bi for bi, b in enumerate(cfg.blocks)
                  if any((e.reads | e.writes) & hmask for e in cfg.effects[b.start:b.end])]
        hot = {cfg.block_of[s] for _, s, e in context.windows(individual) if e > s}
        blocks.sort(key=lambda bi: (bi not in hot, bi))
        head = [bi for bi in blocks if bi in hot]
        context.rng.shuffle(head)
        blocks = head + [bi for bi in blocks if bi not in hot]
        for bi in blocks[:self.tries]:
            b = cfg.blocks[bi]
            try:
                lines, mapping = rename_block(fn, live, cfg, bi, high, limit)
            except Refuse as exc:
                reasons.append(f"block {bi}: {exc}")
                continue
            note = "rename " + ", ".join(f"v{r}->v{t}" for r, t in sorted(mapping.items()))
            result = seal(program, fn.name, b.start, b.end, lines, operator=self.name,
                          note=f"{note} (toward <= {limit} VGPRs)")
            if not isinstance(result, Edit):
                reasons.append(f"block {bi}: {result}")
                continue
            if len(blocks) == 1:        # the last block above the threshold: trim as well
                from asmevo.targets.amdgpu.edits import apply_edit
                after = apply_edit(program, result).function(fn.name)
                g_v, _ = needed_granules(after, program)
                change = vgpr_trim(after, program, g_v)
                if change:
                    result = replace(result, descriptor=tuple(sorted(change.items())))
            return result
        return context.reject("; ".join(reasons[:4]))
