"""Liveness that knows a vector write under EXEC keeps the lanes EXEC leaves off.

:class:`~asmevo.targets.amdgpu.analysis.liveness.Liveness` follows LLVM: a VALU
def is a full def. That is exact within one EXEC value, and wrong across a
divergent join: ``then`` writes v1 under one mask, ``else`` writes v1 under the
complementary mask, the join reads v1 under both. Full-def liveness calls the
``then`` write dead (the ``else`` write "kills" it on the fall-through path), so a
transformation that deletes or renames by it can break the join. Operators that
delete, rename or move vector defs across blocks use this analysis instead.

Each program point carries two register sets:

- ``L``: live only in lanes of the current EXEC (a vector def under this EXEC
  kills them);
- ``P``: possibly live in lanes outside the current EXEC (a vector def under
  this EXEC does not kill them).

Backwards, an EXEC write that may widen EXEC (a restore, an else-branch flip)
turns the vector part of ``L`` into ``P`` (the lanes live after it need not be
lanes of the EXEC before it); one that only narrows keeps ``L`` (its lanes are
lanes of the EXEC before it too); a lane-crossing read
(DPP, ``v_readlane``, ``v_readfirstlane`` (lane 0 when EXEC is empty),
permutes, swizzles, MFMA sources, ``v_writelane``'s kept lanes) makes its vector
sources ``P``. Scalar registers are the same in every lane and only ever sit
in ``L``. Leaving the function other than by ``s_endpgm`` keeps every register
live, as full-def liveness decides it
(:data:`~asmevo.targets.amdgpu.analysis.liveness.LIVE_AT_EXIT`; vector ones in
``P``). A register is live at a point when it is in ``L | P``.
"""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg
from asmevo.targets.amdgpu.analysis.effects import Effects
from asmevo.targets.amdgpu.analysis.liveness import LIVE_AT_EXIT
from asmevo.targets.amdgpu.program import Function

_CROSS_LANE = ("v_readlane", "v_readfirstlane", "v_writelane", "v_permlane", "ds_permute",
               "ds_bpermute", "ds_swizzle", "v_mfma", "v_smfmac", "v_movrel", "v_swaprel")
_VECTOR_CLASSES = ("VALU", "VALU_TRANS", "MFMA", "DOT", "VMEM", "LDS")


def cross_lane(e: Effects) -> bool:
    """Whether ``e`` may read vector registers in lanes outside EXEC."""
    return e.unknown or e.dpp or e.mnemonic.startswith(_CROSS_LANE)


def narrows_exec(e: Effects) -> bool:
    """An EXEC write whose new EXEC is a subset of the old one (``s_and_saveexec``,
    ``v_cmpx``, ``s_and``/``s_andn2`` of EXEC with a mask)."""
    m = e.mnemonic
    if m == "s_and_saveexec_b64" or m.startswith("v_cmpx_"):
        return True
    ops = [o.strip() for o in e.operands]
    return len(ops) == 3 and ops[0] == "exec" and (
        m == "s_and_b64" and "exec" in ops[1:] or m == "s_andn2_b64" and ops[1] == "exec")


def step_back(e: Effects, L: int, P: int) -> tuple[int, int]:
    """(L, P) before ``e`` from (L, P) after it."""
    if e.writes & R.EXEC_MASK and not narrows_exec(e):
        P |= L & R.VECTOR_MASK
        L &= ~R.VECTOR_MASK
    vector = e.klass in _VECTOR_CLASSES
    kills = e.kills
    L &= ~kills
    if not vector:
        P &= ~kills
    else:
        P &= ~(kills & ~R.VECTOR_MASK)
    reads = e.reads
    if cross_lane(e):
        P |= reads & R.VECTOR_MASK
        if e.mnemonic.startswith("v_writelane"):
            P |= e.writes & R.VECTOR_MASK
        reads &= ~R.VECTOR_MASK
    if e.unknown:
        P |= R.ALL & R.VECTOR_MASK
    L |= reads
    return L & ~P, P


class LaneLiveness:
    """Lane-aware live sets at every program point of one function."""

    def __init__(self, fn: Function, cfg: CFG | None = None):
        self.cfg = c = cfg or build_cfg(fn)
        nb = len(c.blocks)
        self.in_L = [0] * nb
        self.in_P = [0] * nb
        self.out_L = [0] * nb
        self.out_P = [0] * nb
        work = list(range(nb - 1, -1, -1))
        queued = [True] * nb
        while work:
            bi = work.pop()
            queued[bi] = False
            L = P = 0
            if c.exits[bi]:
                L, P = LIVE_AT_EXIT & ~R.VECTOR_MASK, LIVE_AT_EXIT & R.VECTOR_MASK
            for s in c.succs[bi]:
                L |= self.in_L[s]
                P |= self.in_P[s]
            L &= ~P
            self.out_L[bi], self.out_P[bi] = L, P
            b = c.blocks[bi]
            for i in range(b.end - 1, b.start - 1, -1):
                L, P = step_back(c.effects[i], L, P)
            if (L, P) != (self.in_L[bi], self.in_P[bi]):
                self.in_L[bi], self.in_P[bi] = L, P
                for p in c.preds[bi]:
                    if not queued[p]:
                        queued[p] = True
                        work.append(p)
        self._points: dict[int, list[tuple[int, int]]] = {}

    def _block(self, bi: int) -> list[tuple[int, int]]:
        pts = self._points.get(bi)
        if pts is None:
            b = self.cfg.blocks[bi]
            L, P = self.out_L[bi], self.out_P[bi]
            pts = [(0, 0)] * (b.end - b.start)
            for i in range(b.end - 1, b.start - 1, -1):
                L, P = step_back(self.cfg.effects[i], L, P)
                pts[i - b.start] = (L, P)
            self._points[bi] = pts
        return pts

    def split_before(self, i: int) -> tuple[int, int]:
        """(L, P) immediately before instruction ``i``."""
        bi = self.cfg.block_of[i]
        return self._block(bi)[i - self.cfg.blocks[bi].start]

    def split_after(self, i: int) -> tuple[int, int]:
        bi = self.cfg.block_of[i]
        b = self.cfg.blocks[bi]
        if i + 1 < b.end:
            return self._block(bi)[i + 1 - b.start]
        return self.out_L[bi], self.out_P[bi]

    def before(self, i: int) -> int:
        L, P = self.split_before(i)
        return L | P

    def after(self, i: int) -> int:
        L, P = self.split_after(i)
        return L | P

    def block_in(self, bi: int) -> int:
        return self.in_L[bi] | self.in_P[bi]

    def block_out(self, bi: int) -> int:
        return self.out_L[bi] | self.out_P[bi]
