"""Register liveness over the CFG, and the dependency DAG of a window.

Liveness tells an operator which registers it may use as scratch inside a
window (those not live there) and which values a rewritten window must still
produce (live-out). The DAG tells a scheduling operator which reorderings keep
the window's meaning.

Conventions, chosen to be safe:
- A def kills a register only when the instruction surely overwrites all of
  it (``Effects.kills``): partial writes (``v_writelane``, d16 loads, SDWA
  with UNUSED_PRESERVE, op_sel to the high half) and unknown instructions kill
  nothing. Like LLVM, a VALU write is a full def although inactive lanes keep
  their value: code that needs those lanes (divergent joins) reads the
  register later under the wider EXEC, which keeps it live.
- Leaving the function other than by ``s_endpgm`` keeps every register live
  (:data:`LIVE_AT_EXIT`). That covers ``s_setpc`` (a return, or an indirect jump),
  ``s_swappc`` (a call: the block graph has no edge to the return point), a
  branch to a label outside the function and falling off the end. The code that
  runs next is not in the function, so the analysis cannot see what it reads: a
  caller reads the return values and every callee-saved register, an indirect
  target may read anything. Assuming nothing is live there would let an
  operator use a returned VGPR as scratch or delete the write of a return
  value; assuming everything is live only costs scratch registers near an exit. Operators, the hot windows' live sets and
  :class:`~asmevo.targets.amdgpu.analysis.lanes.LaneLiveness` all start from
  this one answer.

This is the one full-def liveness of a function; the lane-aware refinement
(:mod:`asmevo.targets.amdgpu.analysis.lanes`) builds on the same CFG and exits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg
from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.targets.amdgpu.program import Function, Instruction


# What is live where control leaves the function other than by s_endpgm (docstring).
LIVE_AT_EXIT = R.ALL


class Liveness:
    """Live register sets (bit masks, see :mod:`regs`) at every program point."""

    def __init__(self, fn: Function, cfg: CFG | None = None):
        self.cfg = cfg or build_cfg(fn)
        c = self.cfg
        nb = len(c.blocks)
        gen = [0] * nb
        kill = [0] * nb
        for bi, b in enumerate(c.blocks):
            g = k = 0
            for i in range(b.end - 1, b.start - 1, -1):
                e = c.effects[i]
                g = e.reads | (g & ~e.kills)
                k |= e.kills
            gen[bi], kill[bi] = g, k
        live_in = [0] * nb
        live_out = [0] * nb
        work = list(range(nb - 1, -1, -1))
        queued = [True] * nb
        while work:
            bi = work.pop()
            queued[bi] = False
            out = LIVE_AT_EXIT if c.exits[bi] else 0
            for s in c.succs[bi]:
                out |= live_in[s]
            live_out[bi] = out
            new_in = gen[bi] | (out & ~kill[bi])
            if new_in != live_in[bi]:
                live_in[bi] = new_in
                for p in c.preds[bi]:
                    if not queued[p]:
                        queued[p] = True
                        work.append(p)
        self.live_in = live_in
        self.live_out = live_out
        self._before: dict[int, list[int]] = {}

    def _block_points(self, bi: int) -> list[int]:
        pts = self._before.get(bi)
        if pts is None:
            b = self.cfg.blocks[bi]
            live = self.live_out[bi]
            pts = [0] * (b.end - b.start)
            for i in range(b.end - 1, b.start - 1, -1):
                e = self.cfg.effects[i]
                live = e.reads | (live & ~e.kills)
                pts[i - b.start] = live
            self._before[bi] = pts
        return pts

    def before(self, i: int) -> int:
        """Registers live immediately before instruction ``i``."""
        if i >= self.cfg.n:
            raise IndexError(i)
        bi = self.cfg.block_of[i]
        return self._block_points(bi)[i - self.cfg.blocks[bi].start]

    def after(self, i: int) -> int:
        """Registers live immediately after instruction ``i``."""
        bi = self.cfg.block_of[i]
        b = self.cfg.blocks[bi]
        if i + 1 < b.end:
            return self._block_points(bi)[i + 1 - b.start]
        return self.live_out[bi]

    def window(self, start: int, end: int) -> tuple[int, int]:
        """(live-in, live-out) of instructions ``[start, end)``."""
        if not 0 <= start < end <= self.cfg.n:
            raise IndexError((start, end))
        return self.before(start), self.after(end - 1)

    def free(self, start: int, end: int, kind: str = "v") -> int:
        """Registers of ``kind`` ("s", "v", "a") not live anywhere in the window."""
        busy = 0
        for i in range(start, end):
            busy |= self.before(i) | self.cfg.effects[i].writes
        busy |= self.after(end - 1)
        space = {"s": (1 << 102) - 1, "v": R.VGPR_MASK, "a": R.AGPR_MASK}[kind]
        return space & ~busy


def liveness(fn: Function) -> Liveness:
    return Liveness(fn)


# --- dependency DAG ----------------------------------------------------------

@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    kind: str        # "raw", "war", "waw", "mem" (memory order), "order" (fence)
    regs: int = 0


@dataclass
class Dag:
    """Edges ``src -> dst`` mean ``src`` must stay before ``dst``."""

    n: int
    edges: list[Edge]
    preds: list[set[int]] = field(default_factory=list)
    succs: list[set[int]] = field(default_factory=list)

    def respects(self, order: list[int]) -> bool:
        """Whether ``order`` (a permutation of range(n)) keeps every edge."""
        if sorted(order) != list(range(self.n)):
            return False
        pos = {k: p for p, k in enumerate(order)}
        return all(pos[e.src] < pos[e.dst] for e in self.edges)


def _eff(x) -> Effects:
    return effects(x.text if isinstance(x, Instruction) else str(x))


def _independent(a: Effects, b: Effects, between: list[Effects]) -> bool:
    """Two memory ops provably touch disjoint bytes: same uniform (scalar-only)
    address operands not rewritten in between, and disjoint offset ranges.
    Per-lane (VGPR) addresses prove nothing: lane k's base + 4 may be lane
    k+1's base."""
    if not a.addr or a.addr != b.addr:
        return False
    amask = R.operand_mask(a.addr)
    if amask & R.VECTOR_MASK:
        return False
    if any(e.writes & amask for e in between):
        return False
    return a.offset + a.width <= b.offset or b.offset + b.width <= a.offset


def dependency_dag(instructions) -> Dag:
    """The DAG of a straight-line window: register RAW/WAR/WAW edges, memory
    order (a store never passes another access to the same space unless proven
    independent) and fences (``s_barrier``, ``s_waitcnt``, branches,
    ``s_setprio``, ``s_sleep``, messages, unknown instructions: nothing moves
    across them). EXEC writes order every vector op through the implicit EXEC
    read. ``s_nop`` is free: hazard padding is re-checked after scheduling."""
    effs = [_eff(x) for x in instructions]
    n = len(effs)
    edges: list[Edge] = []
    for j in range(n):
        b = effs[j]
        b_fence = b.fence or b.unknown or b.is_branch or b.klass in ("END", "BRANCH")
        if b.klass == "NOP":
            continue
        for i in range(j):
            a = effs[i]
            if a.klass == "NOP":
                continue
            a_fence = a.fence or a.unknown or a.is_branch or a.klass in ("END", "BRANCH")
            raw = a.writes & b.reads
            if raw:
                edges.append(Edge(i, j, "raw", raw))
            war = a.reads & b.writes
            if war:
                edges.append(Edge(i, j, "war", war))
            waw = a.writes & b.writes
            if waw:
                edges.append(Edge(i, j, "waw", waw))
            if a_fence or b_fence:
                edges.append(Edge(i, j, "order"))
            elif (a.spaces & b.spaces and (a.mem_store or b.mem_store)
                  and not _independent(a, b, effs[i + 1:j])):
                edges.append(Edge(i, j, "mem"))
    preds: list[set[int]] = [set() for _ in range(n)]
    succs: list[set[int]] = [set() for _ in range(n)]
    for e in edges:
        preds[e.dst].add(e.src)
        succs[e.src].add(e.dst)
    return Dag(n, edges, preds, succs)
