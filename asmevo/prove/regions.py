"""Where a candidate differs from K0: straight-line regions, each inside one basic block.

The two functions are compared as sequences of labels and instruction texts
(:class:`difflib.SequenceMatcher`). Every difference must lie inside one basic
block of K0 and one of the candidate, touch no label and no instruction that ends a
block; the differences in one block are joined into one region, from the first to
the last (a moved instruction is a deletion and an insertion: only the two
together are the same code). A region carries what the proof needs from K0's
lane-aware liveness: what is live after it (in EXEC's lanes, or in all lanes) and
before it, and its whole basic block (the context a refuted region is tried in
again).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness, cross_lane
from asmevo.targets.amdgpu.analysis.liveness import LIVE_AT_EXIT
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.program import Function, Instruction, Label
from asmevo.prove.machine import SCC_REG, Policy


@dataclass(frozen=True)
class Region:
    a: tuple[int, int]            # K0's instructions [start, end)
    b: tuple[int, int]            # the candidate's
    live_after: tuple[int, int]   # (L, P) after the region in K0
    live_before: tuple[int, int]  # (L, P) before it
    block_a: tuple[int, int]      # K0's basic block around it (terminator excluded)
    block_b: tuple[int, int]
    after_block: tuple[int, int]  # (L, P) before K0's block terminator (or after the block)


class NotStraight(Exception):
    """A difference that is not confined to straight-line code (the reason)."""


def _tokens(fn: Function) -> list[tuple[str, str]]:
    return [("L", it.name) if isinstance(it, Label) else ("I", it.text) for it in fn.items]


def _index(fn: Function):
    """Per item: its instruction index (None for a label) and block number; per gap
    between items (``len(items) + 1`` of them): the block code inserted there joins,
    None where it would start a block of its own (after a terminator, before a label)."""
    items = fn.items
    instr, block = [], []
    k, b, started, prev_end = 0, 0, False, False
    for it in items:
        if isinstance(it, Label):
            if started:
                b += 1
            instr.append(None)
            prev_end = False
        else:
            if prev_end:
                b += 1
            instr.append(k)
            k += 1
            prev_end = it.ends_block
        block.append(b)
        started = True
    gap = []
    for g in range(len(items) + 1):
        before = items[g - 1] if g else None
        after = items[g] if g < len(items) else None
        if isinstance(before, Label) or (isinstance(before, Instruction)
                                          and not before.ends_block):
            gap.append(block[g - 1])
        elif isinstance(after, Instruction):
            gap.append(block[g])
        else:
            gap.append(None)
    return instr, block, gap


def diff_regions(fa: Function, fb: Function) -> list[Region]:
    """The straight-line regions where ``fb`` differs from ``fa`` (NotStraight otherwise)."""
    ta, tb = _tokens(fa), _tokens(fb)
    ia, ba, ga = _index(fa)
    ib, bb, gb = _index(fb)
    groups: dict[int, list] = {}
    sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        for items, lo, hi in ((fa.items, i1, i2), (fb.items, j1, j2)):
            for it in items[lo:hi]:
                if not isinstance(it, Instruction):
                    raise NotStraight(f"a label changes ({it.name})")
                if it.ends_block:
                    raise NotStraight(f"control flow changes ({it.text})")
        blk_a = ba[i1] if i2 > i1 else ga[i1]
        blk_b = bb[j1] if j2 > j1 else gb[j1]
        if blk_a is None or blk_b is None:
            raise NotStraight("code added where it starts a basic block of its own")
        if i2 > i1 and ba[i2 - 1] != blk_a or j2 > j1 and bb[j2 - 1] != blk_b:
            raise NotStraight("a difference spans basic blocks")
        groups.setdefault(blk_a, []).append((i1, i2, j1, j2, blk_b))
    if len({g[0][4] for g in groups.values()}) != len(groups):
        raise NotStraight("differences in two blocks of K0 meet in one of the candidate")
    lane = LaneLiveness(fa)
    return [_region(fa, fb, lane, (ia, ba, ga), (ib, bb, gb), g)
            for _, g in sorted(groups.items())]


def _instr_at(items, index, pos: int, n: int) -> int:
    """The instruction index at item position ``pos`` (the next instruction's)."""
    for p in range(pos, len(items)):
        if index[p] is not None:
            return index[p]
    return n


def _region(fa, fb, lane, index_a, index_b, group) -> Region:
    i1 = min(g[0] for g in group)
    i2 = max(g[1] for g in group)
    j1 = min(g[2] for g in group)
    j2 = max(g[3] for g in group)
    a0, a1, anchor_a = _span(fa, index_a, i1, i2)
    b0, b1, anchor_b = _span(fb, index_b, j1, j2)
    na = len(fa.instructions)
    if a1 == a0 and anchor_a == a0 < na:   # inserted before a0, in its block
        before = after = lane.split_before(a0)
    else:
        before = split_at(fa, lane, a0)
        after = split_at(fa, lane, a1) if a1 > a0 or a0 < na else (LIVE_AT_EXIT, 0)
    block_a, block_b = _block(fa, anchor_a), _block(fb, anchor_b)
    return Region((a0, a1), (b0, b1), after, before, block_a, block_b,
                  split_at(fa, lane, block_a[1]))


def _span(fn, index, lo: int, hi: int) -> tuple[int, int, int]:
    """The instructions ``[start, end)`` at item positions ``[lo, hi)`` and the
    instruction whose block holds them. An empty span (code inserted on the other side)
    is in the block its gap joins (:func:`_index`): at a block's start (after a
    terminator, or after a label) the following instruction's, else the preceding's."""
    instr, block, gap = index
    n = len(fn.instructions)
    start, end = _instr_at(fn.items, instr, lo, n), _instr_at(fn.items, instr, hi, n)
    if end > start:
        return start, end, start
    joins_next = lo < len(fn.items) and gap[lo] == block[lo] and start < n
    return start, end, start if joins_next else max(start - 1, 0)


def split_at(fn: Function, lane: LaneLiveness, i: int) -> tuple[int, int]:
    """(L, P) just before instruction ``i`` of ``fn`` (after the last one for ``i == n``;
    at a block's end, what flows out of it)."""
    n = len(fn.instructions)
    if n == 0:
        return LIVE_AT_EXIT & ~R.VECTOR_MASK, LIVE_AT_EXIT & R.VECTOR_MASK
    if i < n and (i == 0 or lane.cfg.block_of[i] == lane.cfg.block_of[i - 1]):
        return lane.split_before(i)
    return lane.split_after(i - 1) if i > 0 else lane.split_before(0)


def _block(fn: Function, i: int) -> tuple[int, int]:
    """Instruction range of the basic block holding ``i``, its terminator excluded."""
    for b in fn.blocks():
        if b.start <= i < b.end or (b.start == b.end == i):
            end = b.end
            if end > b.start and fn.instructions[end - 1].ends_block:
                end -= 1
            return b.start, end
    return i, i


def policy_of(live: tuple[int, int], accum: int, texts=(), after: int = 0,
              known: dict | None = None) -> Policy:
    """Entry states that agree on what K0 has live (L: in EXEC's lanes, P: in all), for
    windows of ``texts``; ``after``: what is compared in every lane at the end;
    ``known``: SGPRs whose values the candidate holds from an earlier region."""
    lanes, every = live
    both = lanes | every
    shared_s = frozenset(r for r in range(128) if (both >> r) & 1) | (
        {SCC_REG} if both & R.SCC_MASK else set())

    def vregs(mask):
        out = set()
        for b in range(R.VGPR_BASE, R.NBITS):
            if (mask >> b) & 1:
                out.add(b - R.VGPR_BASE if b < R.AGPR_BASE else accum + b - R.AGPR_BASE)
        return frozenset(out)
    stable = not any(effects(t).writes & R.EXEC_MASK or cross_lane(effects(t)) for t in texts)
    return Policy(shared_s, vregs(every), vregs(lanes & ~every), stable, vregs(after),
                  tuple(sorted((known or {}).items(), key=lambda kv: kv[0])))
