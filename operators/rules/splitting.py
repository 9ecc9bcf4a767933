"""Live-range splitting: a value no single free register can hold, moved between several.

``occupancy_rename`` moves each value above the occupancy threshold into one unit that
is free wherever the value is live. A long-lived value (Triton keeps the ``exp`` of a
whole row's chunk across hundreds of instructions) may find no register free for its
whole life although some register is free at every point: the registers in use below
the threshold change along the way. Splitting puts the value in one free register,
and just before that register is needed by another value, copies it
(``v_mov_b32 new, old``) into a register that is free from there on.

Exact by construction, and only where that is easy to see: one 32-bit value with one
definition, a plain VALU write of the whole register (no DPP, SDWA or partial write),
all of its reads after it in the same block, no EXEC write from the definition to the
last read (each copy moves exactly the lanes the reads read) and no lane-crossing
read (DPP, ``v_readlane``, permutes: they would read lanes the copies skip). Every
register it passes through is live in no lane and written by no other instruction
while it holds the value (the last read may overwrite it: reads come first). The
copies cost one VALU issue each; at most :data:`MAX_COPIES` per value.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.lanes import cross_lane

MAX_COPIES = 4


def bit(r: int) -> int:
    return 1 << (R.VGPR_BASE + r)


@dataclass
class Split:
    """Where one value lives: its definition's register and, per point, the register."""

    first: int                               # the register the definition writes
    at: dict[int, int] = field(default_factory=dict)      # point -> register
    copies: dict[int, tuple[int, int]] = field(default_factory=dict)   # point -> (from, to)


def _shape(flow, w, mask: int) -> str | None:
    """Why web ``w`` cannot be split (None: it can)."""
    cfg = flow.cfg
    if len(w.defs) != 1:
        return "more than one definition"
    d = next(iter(w.defs))
    e = cfg.effects[d]
    if e.klass not in ("VALU", "VALU_TRANS") or e.mfma or e.dpp or e.sdwa \
            or e.kills & mask != mask or e.mem:
        return f"#{d} is not a plain VALU write of the whole register"
    bi = cfg.block_of[d]
    last = max(w.reads, default=d)
    if any(cfg.block_of[k] != bi or k <= d for k in w.reads) \
            or w.region != set(range(d + 1, last + 1)):
        return "its reads are not all after the definition in one block"
    if any(cfg.effects[k].writes & R.EXEC_MASK for k in range(d, last + 1)):
        return "EXEC changes while it is live"
    if any(cross_lane(cfg.effects[k]) for k in w.reads):
        return "a read crosses lanes"
    return None


def split_web(flow, w, mask: int, limit: int, occ: dict[int, int],
              occ_writes: dict[int, int]) -> Split | str:
    """A :class:`Split` of web ``w`` (of the one register ``mask``) below ``limit``, or
    why there is none. ``occ``/``occ_writes``: what values moved earlier hold / write."""
    why = _shape(flow, w, mask)
    if why is not None:
        return why
    d = next(iter(w.defs))
    last = max(w.reads)
    cfg, lanes = flow.cfg, flow.lanes

    def free(k: int, r: int) -> bool:
        return not (lanes.before(k) | occ.get(k, 0)) & bit(r)

    def kept(j: int, r: int) -> bool:          # instruction j leaves r alone
        return j == last or not (cfg.effects[j].writes | occ_writes.get(j, 0)) & bit(r)

    def reach(r: int, start: int) -> int:
        """The last point from ``start`` up to which ``r`` can hold the value."""
        k = start
        if not free(k, r):
            return start - 1
        while k < last and kept(k, r) and free(k + 1, r):
            k += 1
        return k

    out = None
    point = d + 1
    held = None
    while point <= last:
        best = max(range(limit), key=lambda r: (reach(r, point), -r))
        end = reach(best, point)
        if end < point or (held is not None and end == point and point < last):
            return f"no register below v{limit} is free at #{point}"
        if held is None:
            out = Split(best)
        else:
            if len(out.copies) >= MAX_COPIES:
                return f"more than {MAX_COPIES} copies"
            out.copies[point] = (held, best)
        for k in range(point, end + 1):
            out.at[k] = best
        held = best
        if end == last:
            return out
        point = end        # copy before instruction ``end``: both registers hold it there
    return out


def apply_split(flow, w, lo: int, s: Split, texts: dict[int, str], inserted: dict,
                occ: dict[int, int], occ_writes: dict[int, int], rename) -> None:
    """Record the split's renamed lines, inserted copies and occupancy."""
    d = next(iter(w.defs))
    texts[d] = rename(texts.get(d, flow.cfg.texts[d]), lo, 1, s.first)
    occ_writes[d] = occ_writes.get(d, 0) | bit(s.first)
    for k in w.reads:
        texts[k] = rename(texts.get(k, flow.cfg.texts[k]), lo, 1, s.at[k])
    for k, r in s.at.items():
        occ[k] = occ.get(k, 0) | bit(r)
    for k, (a, b) in s.copies.items():
        occ[k] = occ.get(k, 0) | bit(a) | bit(b)
        inserted.setdefault(k, []).append(f"v_mov_b32_e32 v{b}, v{a}")
