"""``occupancy_rename``: rename VGPR values across blocks so the kernel needs fewer VGPRs.

``trim_registers`` renames a register above the next occupancy threshold only
inside one block, into a register free across that whole block. This operator
renames *values*: a web is a set of definitions of one register unit (a VGPR or
an aligned tuple, always named whole) and the reads they reach, found with
lane-aware reaching definitions (a vector write under a narrower EXEC, or one
after which other lanes stay live, does not end the older value: both reach).
Its region is every program point where the web's value is live, across
blocks. The web moves to a unit below the threshold that, at every point of the
region, is live in no lane and written by no other instruction (the web's last
read may write it: reading happens first); tuples stay aligned. All webs of all
units above the threshold move in one proposal (one edit per block touched),
and the descriptor's VGPR granule (and on gfx90a/gfx942 ``accum_offset``) is
lowered with it, so the kernel crosses the threshold: the same instructions on
the same values, under other register names.

A single-register value no one unit can hold (the registers free below the threshold
change along its life) is split (``split``, default on;
:mod:`asmevo.operators.rules.splitting`): it starts in one free register and is copied with
``v_mov_b32`` into another just before the first one is needed, within its block.

Refused, with the reason: occupancy not VGPR-limited or at its cap, AGPRs in
use, a register named partly by a tuple, an implicit register access
(``v_movrel``, ``s_set_gpr_idx``), a value read before any write (launch
state), or no free unit for some web that splitting cannot place either (the peak of
live values is above the threshold, a tuple, reads in other blocks, an EXEC change or
a lane-crossing read while it is live: then only rematerialization or spilling would
help).

Why faster: one more wave per SIMD hides more memory latency, when the launch
has enough workgroups to fill them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.operators.rules.common import Refuse
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.registers import (fmt_range, needed_granules, next_threshold, reg_bit,
                                              vgpr_trim)
from asmevo.operators.rules.splitting import apply_split, split_web
from asmevo.operators.rules.structure import Flow, StructuralMutation, reaching_writes, seal_edits

_RANGE = re.compile(r"(?<![\w.])v(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
_IMPLICIT = ("v_movrel", "s_movrel", "s_set_gpr_idx", "v_swaprel")


def units(texts: list[str], first_high: int) -> dict[int, tuple[int, bool]]:
    """Register units touching VGPRs >= ``first_high``: first register -> (width, whether
    a tuple of two or more is named in it). Ranges that overlap join one unit (``v168``
    and ``v[168:169]`` move together, by one offset)."""
    spans: list[list[int]] = []
    for t in texts:
        for m in _RANGE.finditer(t):
            lo = int(m.group(3) if m.group(3) is not None else m.group(1))
            hi = lo if m.group(3) is not None or m.group(2) is None else int(m.group(2))
            if hi >= first_high:
                spans.append([lo, hi, hi > lo])
    spans.sort()
    merged: list[list] = []
    for lo, hi, tup in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
            merged[-1][2] = merged[-1][2] or tup
        else:
            merged.append([lo, hi, tup])
    return {lo: (hi - lo + 1, tup) for lo, hi, tup in merged}


def _mask(lo: int, n: int) -> int:
    m = 0
    for r in range(lo, lo + n):
        m |= reg_bit("v", r)
    return m


@dataclass
class Web:
    defs: set[int] = field(default_factory=set)
    reads: set[int] = field(default_factory=set)
    region: set[int] = field(default_factory=set)   # instructions the value is live before


def _ends_value(flow: Flow, k: int, mask: int) -> bool:
    """Write ``k`` replaces every lane of ``mask`` that is still needed after it."""
    e = flow.cfg.effects[k]
    if e.kills & mask != mask or e.dpp or e.sdwa:
        return False
    return not flow.lanes.split_after(k)[1] & mask


def reaching(flow: Flow, i: int, mask: int) -> set[int]:
    """Lane-aware reaching definitions of ``mask`` at ``i``; Refuse when some path
    reaches ``i`` from the launch with no write."""
    found, outside = reaching_writes(flow, i, mask, ends=lambda k: _ends_value(flow, k, mask))
    if outside:
        raise Refuse(f"{R.render(mask)} is read before any write (launch state)")
    return found


def webs(flow: Flow, lo: int, n: int) -> list[Web]:
    """The webs of unit ``v[lo:lo+n-1]``, each with its region."""
    cfg = flow.cfg
    mask = _mask(lo, n)
    reads_of: dict[int, set[int]] = {}
    links: dict[int, set[int]] = {}           # def -> defs it shares a read with
    for i, e in enumerate(cfg.effects):
        if not cfg.reachable[cfg.block_of[i]]:
            continue
        if e.mnemonic.startswith(_IMPLICIT) or e.unknown:
            raise Refuse(f"{cfg.texts[i]!r} may access registers implicitly")
        if e.writes & mask:
            links.setdefault(i, set())
        if e.reads & mask:
            ds = reaching(flow, i, e.reads & mask)
            if e.writes & mask:                      # read and rewrite: one web
                ds = ds | {i}
            reads_of[i] = ds
            for d in ds:
                links.setdefault(d, set()).update(ds)
    out: list[Web] = []
    owner: dict[int, Web] = {}
    for d in sorted(links):
        if d in owner:
            continue
        w, todo = Web(), [d]
        while todo:
            x = todo.pop()
            if x not in owner:
                owner[x] = w
                w.defs.add(x)
                todo.extend(links[x])
        out.append(w)
    for i, ds in reads_of.items():
        owner[min(ds)].reads.add(i)
    for w in out:
        w.region = _region(flow, w, mask)
    return out


def following(flow: Flow, k: int) -> list[int]:
    """The instructions that may run right after instruction ``k``."""
    cfg = flow.cfg
    bi = cfg.block_of[k]
    if k + 1 < cfg.blocks[bi].end:
        return [k + 1]
    out, seen, stack = [], set(), list(cfg.succs[bi])
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        if cfg.blocks[s].end > cfg.blocks[s].start:
            out.append(cfg.blocks[s].start)
        else:
            stack.extend(cfg.succs[s])
    return out


def _region(flow: Flow, w: Web, mask: int) -> set[int]:
    """Instructions before which the web's value is live (in some lane)."""
    region: set[int] = set()
    work = [p for d in w.defs for p in following(flow, d)]
    seen: set[int] = set()
    while work:
        k = work.pop()
        if k in seen:
            continue
        seen.add(k)
        if not flow.lanes.before(k) & mask:
            continue
        region.add(k)
        if k in w.defs and _ends_value(flow, k, mask):
            continue                      # a new value of the web starts; walked from k
        work.extend(following(flow, k))
    return region


def fits(flow: Flow, w: Web, mask: int, new: int, occ: dict[int, int],
         occ_writes: dict[int, int]) -> bool:
    """Whether unit ``new`` may hold web ``w`` of unit ``mask``: live in no lane wherever
    the web's value is, nor right after the web's writes, and written by nothing else
    while the value is still needed (``occ``: what earlier moved webs now hold)."""
    cfg = flow.cfg
    lanes = flow.lanes
    for d in w.defs:
        for p in following(flow, d):
            if (lanes.before(p) | occ.get(p, 0)) & new:
                return False
    for k in w.region:
        if (lanes.before(k) | occ.get(k, 0)) & new:
            return False
        if (cfg.effects[k].writes | occ_writes.get(k, 0)) & new and k not in w.defs:
            if k not in w.reads or lanes.after(k) & mask:
                return False
    return True


def rename_text(text: str, lo: int, n: int, to: int) -> str:
    """``text`` with every VGPR range inside ``v[lo:lo+n-1]`` moved by ``to - lo``."""
    def sub(m: re.Match) -> str:
        a = int(m.group(3) if m.group(3) is not None else m.group(1))
        b = a if m.group(3) is not None or m.group(2) is None else int(m.group(2))
        if lo <= a and b <= lo + n - 1:
            return fmt_range("v", a - lo + to, b - a + 1)
        if b < lo or a > lo + n - 1:
            return m.group(0)
        raise Refuse(f"{text!r} names part of v[{lo}:{lo + n - 1}]")
    return _RANGE.sub(sub, text)


def plan(flow: Flow, limit: int, split: bool = True
         ) -> tuple[dict[int, str], dict[int, list[str]]]:
    """New text of every instruction that changes, and the copies inserted before an
    instruction (live-range splits, with ``split``); or Refuse."""
    texts = list(flow.cfg.texts)
    todo = units(texts, limit)
    occ: dict[int, int] = {}
    occ_writes: dict[int, int] = {}
    new_text: dict[int, str] = {}
    inserted: dict[int, list[str]] = {}
    for lo, (n, tup) in sorted(todo.items(), key=lambda u: -u[1][0]):
        mask = _mask(lo, n)
        for w in webs(flow, lo, n):
            to = _unit_for(flow, w, mask, n, tup, limit, occ, occ_writes)
            if to is None:
                s = split_web(flow, w, mask, limit, occ, occ_writes) if n == 1 and split \
                    else "a tuple is not split" if split else "splitting is off"
                if isinstance(s, str):
                    raise Refuse(f"no free {fmt_range('v', 0, n).replace('0', '?')} below "
                                 f"v{limit} for the value of {fmt_range('v', lo, n)} written "
                                 f"at #{min(w.defs)} (live values peak above the threshold), "
                                 f"and it cannot be split: {s}")
                apply_split(flow, w, lo, s, new_text, inserted, occ, occ_writes, rename_text)
                continue
            nm = _mask(to, n)
            for k in w.region | {p for d in w.defs for p in following(flow, d)}:
                occ[k] = occ.get(k, 0) | nm
            for d in w.defs:
                occ_writes[d] = occ_writes.get(d, 0) | nm
            for k in w.defs | w.reads:
                new_text[k] = rename_text(new_text.get(k, texts[k]), lo, n, to)
    return new_text, inserted


def _unit_for(flow, w, mask, n, tup, limit, occ, occ_writes) -> int | None:
    """The lowest unit below ``limit`` that may hold web ``w`` whole (None: none)."""
    for to in range(mask_lo(mask) % 2 if tup else 0, limit - n + 1, 2 if tup else 1):
        if fits(flow, w, mask, _mask(to, n), occ, occ_writes):
            return to
    return None


def mask_lo(mask: int) -> int:
    return (mask & -mask).bit_length() - 1 - R.VGPR_BASE


@mutation("occupancy_rename", targets=("amdgpu",))
class OccupancyRename(StructuralMutation):
    """Rename VGPR values across blocks below the next occupancy threshold (module doc)."""

    def __init__(self, split: bool = True):
        super().__init__()
        self.split = split

    def mutate(self, individual, context: OperatorContext):
        program = context.program(individual)
        fn = program.function(context.kernel)
        if fn.kernel is None:
            return context.reject("not a kernel: no descriptor")
        limit = next_threshold(fn, program)
        if limit is None:
            return context.reject("occupancy is not VGPR-limited (or at its cap)")
        if fn.register_usage().agprs:
            return context.reject("AGPRs in use: they count towards the allocation")
        if fn.register_usage().vgprs <= limit:
            return context.reject(f"the code already uses <= {limit} VGPRs; trim_registers "
                                  "lowers the descriptor")
        flow = Flow(program, fn.name)
        try:
            changed, inserted = plan(flow, limit, self.split)
        except Refuse as exc:
            return context.reject(str(exc))
        cfg = flow.cfg
        windows = []
        for b in cfg.blocks:
            if any(k in changed or k in inserted for k in range(b.start, b.end)):
                windows.append((b.start, b.end, [t for k in range(b.start, b.end) for t in
                                                 inserted.get(k, []) + [changed.get(
                                                     k, cfg.texts[k])]]))
        copies = sum(len(v) for v in inserted.values())
        result = seal_edits(program, fn.name, windows, operator=self.name,
                            note=f"{len(changed)} instruction(s) renamed below v{limit}"
                                 + (f", {copies} copies splitting live ranges" if copies
                                    else ""))
        if isinstance(result, Rejected):
            return context.reject(result.reason)
        after = program
        for e in result:
            after = apply_edit(after, e)
        g_v, _ = needed_granules(after.function(fn.name), program)
        change = vgpr_trim(after.function(fn.name), program, g_v)
        if not change:
            return context.reject("the rename does not lower the VGPR allocation")
        last = replace(result[-1], descriptor=tuple(sorted(change.items())))
        return result[:-1] + (last,)
