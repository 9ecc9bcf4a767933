"""Live ranges ("webs") of a straight-line loop body, and renaming them.

One register often carries several unrelated values in one loop iteration (clang's
naive matmul uses ``v5`` first for the sign half of the 64-bit index ``v[4:5]``,
then for the loaded ``B`` element). Renaming per register would have to keep both
(the first is tied to the loop-carried ``v4``); renaming per *web* -- one full
definition and every read it reaches -- frees the second alone, which is what lets
two unrolled copies (or a prefetch and its consumer) use different registers.

A web starts at an instruction that surely overwrites the whole register
(``Effects.kills``); a write that does not (``v_fmac`` accumulating into its
destination, SDWA or d16 partial writes, ``s_cmov``) continues the web it reads. A
web that is live at the top of the body (read before any full definition) is the
loop-carried one and never renamed. Operands that name several registers at once
(``v[4:5]``) tie their webs into one *group*, renamed together into a contiguous,
equally aligned range.

A group may be renamed only if every occurrence of its webs is named in an operand
(no implicit VCC/EXEC/M0-style use), nothing reads or writes it across lanes (DPP,
``v_readlane``, permutes, swizzles: their inactive-lane values would differ), and,
for the web that is still live at the end of the body, the register is not read at
the top of the body (else the value flows into the next iteration).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects

_RANGE = re.compile(r"(?<![\w.])([sv])(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
_CROSS_LANE = ("readlane", "writelane", "permlane", "swizzle", "permute", "_dpp",
               "v_mov_b32_sdwa")
LIMITS = {"v": 256, "s": 102}


def _bit(kind: str, r: int) -> int:
    return 1 << ((R.VGPR_BASE if kind == "v" else R.SGPR_BASE) + r)


def operand_regs(op: str) -> list[tuple[str, int, int]]:
    """The ``(kind, first, last)`` VGPR/SGPR ranges one operand names."""
    out = []
    for m in _RANGE.finditer(op):
        first = int(m.group(4) if m.group(4) is not None else m.group(2))
        last = first if m.group(4) is not None or m.group(3) is None else int(m.group(3))
        if last < LIMITS[m.group(1)]:
            out.append((m.group(1), first, last))
    return out


@dataclass
class Web:
    kind: str
    reg: int
    ok: bool               # may be renamed (starts at a full definition in the body)
    live_in: bool = False  # the value the body starts with
    start: int = -1        # the instruction whose full definition starts it


@dataclass
class Webs:
    """The webs of ``texts``: ``occ[k][o]`` lists the web of each register operand ``o``
    of instruction ``k`` names (in register order); ``last[(kind, reg)]`` is the web
    live at the end."""

    texts: list[str]
    webs: list[Web] = field(default_factory=list)
    occ: list[dict[int, list[int]]] = field(default_factory=list)
    last: dict[tuple[str, int], int] = field(default_factory=dict)
    parent: list[int] = field(default_factory=list)

    def find(self, w: int) -> int:
        while self.parent[w] != w:
            self.parent[w] = self.parent[self.parent[w]]
            w = self.parent[w]
        return w

    def group_members(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for w in range(len(self.webs)):
            out.setdefault(self.find(w), []).append(w)
        return out


def _keys(mask: int):
    """The ``(kind, reg)`` of every VGPR/SGPR in ``mask``."""
    for kind, base in (("v", R.VGPR_BASE), ("s", R.SGPR_BASE)):
        m = (mask >> base) & ((1 << LIMITS[kind]) - 1)
        while m:
            low = m & -m
            yield kind, low.bit_length() - 1
            m ^= low


def webs_of(texts: list[str]) -> Webs:
    """Build the webs of a straight-line ``texts`` (no branches in the middle)."""
    ws = Webs(list(texts))
    cur: dict[tuple[str, int], int] = {}

    def new(key, ok, live_in=False, start=-1) -> int:
        ws.webs.append(Web(key[0], key[1], ok, live_in, start))
        ws.parent.append(len(ws.webs) - 1)
        return len(ws.webs) - 1

    def current(key) -> int:
        if key not in cur:
            cur[key] = new(key, False, True)
        return cur[key]

    bad: set[int] = set()
    for k_ins, t in enumerate(texts):
        e = effects(t)
        named = 0
        for m in e.op_masks:
            named |= m
        stray = (e.reads | e.writes) & ~named
        cross = e.unknown or e.dpp or any(x in e.mnemonic for x in _CROSS_LANE)
        occ: dict[int, list[int]] = {}
        for o in range(e.ndefs, len(e.operands)):
            occ[o] = [current((k, r)) for k, a, b in operand_regs(e.operands[o])
                      for r in range(a, b + 1)]
        for o in range(min(e.ndefs, len(e.operands))):
            ids = []
            for k, a, b in operand_regs(e.operands[o]):
                for r in range(a, b + 1):
                    key = (k, r)
                    if e.kills & _bit(k, r):
                        cur[key] = new(key, True, start=k_ins)
                    ids.append(current(key))
            occ[o] = ids
        for key in _keys(stray | ((e.reads | e.writes) if cross else 0)):
            bad.add(current(key))
        for ids in occ.values():
            for w in ids[1:]:
                ws.parent[ws.find(w)] = ws.find(ids[0])
        ws.occ.append(occ)
    ws.last = dict(cur)
    for key, w in cur.items():
        live_in = next((x for x, web in enumerate(ws.webs)
                        if web.live_in and (web.kind, web.reg) == key), None)
        if live_in is not None and w != live_in:
            bad.add(w)                    # the final value feeds the next iteration's read
    for w in bad:
        ws.webs[w].ok = False
    return ws


def web_bit(web: Web) -> int:
    """The register bit (:mod:`asmevo.targets.amdgpu.analysis.regs`) of ``web``."""
    return _bit(web.kind, web.reg)


def renamable_groups(ws: Webs) -> list[list[int]]:
    """Groups (lists of webs) whose every web may be renamed."""
    return [m for m in ws.group_members().values() if all(ws.webs[w].ok for w in m)]


def group_span(ws: Webs, members: list[int]) -> tuple[str, int, int, int]:
    """``(kind, lo, hi, widest operand)`` of a group."""
    kind = ws.webs[members[0]].kind
    regs = [ws.webs[w].reg for w in members]
    widest = 1
    mset = set(members)
    for occ in ws.occ:
        for ids in occ.values():
            if mset & set(ids):
                widest = max(widest, len(ids))
    return kind, min(regs), max(regs), widest


def alignment(kind: str, widest: int) -> int:
    """Register alignment an operand of ``widest`` registers needs (GFX9: SGPR pairs
    even, wider SGPR tuples 4-aligned; gfx90a+ VGPR tuples even)."""
    if widest == 1:
        return 1
    return 2 if kind == "v" or widest == 2 else 4


def rewrite(ws: Webs, new_reg: dict[int, int], only=None) -> list[str]:
    """``ws.texts`` with every occurrence of web ``w`` renamed to ``new_reg[w]``
    (``only``: at those instruction indices only)."""
    out = []
    for k, t in enumerate(ws.texts):
        occ = ws.occ[k]
        if only is not None and k not in only or \
                not any(w in new_reg for ids in occ.values() for w in ids):
            out.append(t)
            continue
        e = effects(t)
        ops = list(e.operands)
        for o, ids in occ.items():
            if any(w in new_reg for w in ids):
                ops[o] = _rename_operand(ops[o], ids, new_reg, ws)
        text = e.mnemonic + (" " + ", ".join(ops) if ops else "")
        if e.modifiers:
            text += " " + " ".join(e.modifiers)
        out.append(text)
    return out


def _rename_operand(op: str, ids: list[int], new_reg: dict[int, int], ws: Webs) -> str:
    by_reg = {(ws.webs[w].kind, ws.webs[w].reg): new_reg.get(w) for w in ids}

    def sub(m: re.Match) -> str:
        kind = m.group(1)
        first = int(m.group(4) if m.group(4) is not None else m.group(2))
        last = first if m.group(4) is not None or m.group(3) is None else int(m.group(3))
        new = [by_reg.get((kind, r)) for r in range(first, last + 1)]
        if all(x is None for x in new):
            return m.group(0)
        if any(x is None for x in new) or new != list(range(new[0], new[0] + len(new))):
            raise ValueError(f"operand {op!r} would be split by a rename")
        if m.group(4) is not None:
            return f"{kind}{new[0]}"
        return f"{kind}[{new[0]}:{new[-1]}]" if len(new) > 1 or m.group(3) else f"{kind}[{new[0]}]"
    return _RANGE.sub(sub, op)
