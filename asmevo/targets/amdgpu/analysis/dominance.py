"""Dominators and natural loops of one function's CFG.

Structural operators move code between blocks (out of a loop, into a
dominating block) and must know which blocks always run before which, and
what a loop is: its header, its body, the edges that leave it and the one
block through which it is entered. Compiler output for GFX9 is a reducible,
structurized CFG, so the classic definitions apply: a back edge ``t -> h``
is one whose head ``h`` dominates its tail ``t``, and its natural loop is
``h`` plus every block that reaches ``t`` without passing ``h``.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu.analysis.cfg import CFG


def reverse_postorder(cfg: CFG) -> list[int]:
    """Reachable blocks in reverse postorder from block 0."""
    if not cfg.blocks:
        return []
    seen = [False] * len(cfg.blocks)
    post: list[int] = []
    stack = [(0, iter(cfg.succs[0]))]
    seen[0] = True
    while stack:
        b, it = stack[-1]
        for s in it:
            if not seen[s]:
                seen[s] = True
                stack.append((s, iter(cfg.succs[s])))
                break
        else:
            stack.pop()
            post.append(b)
    return post[::-1]


def immediate_dominators(cfg: CFG) -> list[int | None]:
    """``idom[b]`` for every block (the entry's is itself; unreachable: None), by
    the iterative algorithm of Cooper, Harvey and Kennedy over reverse postorder."""
    order = reverse_postorder(cfg)
    index = {b: k for k, b in enumerate(order)}
    idom: list[int | None] = [None] * len(cfg.blocks)
    if not order:
        return idom
    idom[order[0]] = order[0]

    def intersect(a: int, b: int) -> int:
        while a != b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            done = [p for p in cfg.preds[b] if idom[p] is not None and p in index]
            if not done:
                continue
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom[b] != new:
                idom[b] = new
                changed = True
    return idom


class Dominators:
    """Dominance queries over one CFG (blocks by index)."""

    def __init__(self, cfg: CFG):
        self.cfg = cfg
        self.idom = immediate_dominators(cfg)

    def dominates(self, a: int, b: int) -> bool:
        """Whether block ``a`` dominates block ``b`` (every block dominates itself;
        an unreachable block is dominated by nothing)."""
        if self.idom[b] is None or self.idom[a] is None:
            return False
        while True:
            if b == a:
                return True
            up = self.idom[b]
            if up == b:
                return False
            b = up

    def instruction_dominates(self, i: int, j: int) -> bool:
        """Whether instruction ``i`` runs before ``j`` on every path to ``j``."""
        bi, bj = self.cfg.block_of[i], self.cfg.block_of[j]
        if bi == bj:
            return i < j
        return self.dominates(bi, bj)


@dataclass(frozen=True)
class Loop:
    """A natural loop: ``body`` holds block indices, ``header`` among them."""

    header: int
    body: frozenset[int]
    latches: tuple[int, ...]           # body blocks with an edge back to the header
    exits: tuple[tuple[int, int], ...]  # (body block, outside block) edges
    preheader: int | None              # the one outside predecessor, if its only successor
                                       # is the header (None: no such block)

    @property
    def exiting(self) -> tuple[int, ...]:
        return tuple(sorted({a for a, _ in self.exits}))

    def instructions(self, cfg: CFG) -> list[int]:
        """Instruction indices of the body, in program order."""
        out: list[int] = []
        for b in sorted(self.body):
            out.extend(range(cfg.blocks[b].start, cfg.blocks[b].end))
        return out


def natural_loops(cfg: CFG, dom: Dominators | None = None) -> list[Loop]:
    """Every natural loop (back edges with one header merged), innermost first."""
    dom = dom or Dominators(cfg)
    bodies: dict[int, set[int]] = {}
    for t in range(len(cfg.blocks)):
        for h in cfg.succs[t]:
            if not dom.dominates(h, t):
                continue
            body = bodies.setdefault(h, {h})
            stack = [t]
            while stack:
                b = stack.pop()
                if b in body:
                    continue
                body.add(b)
                stack.extend(p for p in cfg.preds[b] if cfg.reachable[p])
    loops = []
    for h, body in bodies.items():
        latches = tuple(sorted(p for p in cfg.preds[h] if p in body))
        exits = tuple(sorted((a, s) for a in body for s in cfg.succs[a] if s not in body))
        outside = [p for p in cfg.preds[h] if p not in body and cfg.reachable[p]]
        pre = outside[0] if len(outside) == 1 and set(cfg.succs[outside[0]]) == {h} \
            and not cfg.exits[outside[0]] else None
        loops.append(Loop(h, frozenset(body), latches, exits, pre))
    loops.sort(key=lambda lp: (len(lp.body), lp.header))
    return loops
