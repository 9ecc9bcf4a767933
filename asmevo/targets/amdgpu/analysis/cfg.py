"""The control-flow graph of one function, with every instruction's effects.

The profile's hot windows, every operator and the static gate (waitcnt,
hazards) read this one graph, so a window the profile ranks is a block (or part
of one) that the operators and the gate see the same way. The blocks themselves
are the program's structure (:meth:`Function.blocks`, the only place a function
is cut into blocks; target-neutral code such as the engine's default windows
reads them there); this module turns their successor names (labels, ``#i`` for
an unlabeled block) into indices both ways, maps every instruction to its block,
decodes its effects and marks the blocks that leave the function
(:attr:`CFG.exits`). What is live at such an exit is decided once, in
:mod:`asmevo.targets.amdgpu.analysis.liveness`.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.targets.amdgpu.program import BasicBlock, Function

# Instructions that end the program: a block ending in one leaves nothing live.
ENDS = ("s_endpgm", "s_endpgm_saved", "s_trap")


@dataclass
class CFG:
    blocks: list[BasicBlock]
    succs: list[list[int]]
    preds: list[list[int]]
    exits: list[bool]           # leaves the function other than by s_endpgm / known label
    block_of: list[int]         # instruction index -> block index
    effects: list[Effects]
    texts: list[str]
    addresses: list[int | None]
    reachable: list[bool]

    @property
    def n(self) -> int:
        return len(self.effects)


def build_cfg(fn: Function) -> CFG:
    """The graph of ``fn``: a block exits when it ends in ``s_setpc``/``s_swappc``, branches
    to a label outside the function, or runs off the end without ``s_endpgm``."""
    blocks = fn.blocks()
    instrs = fn.instructions
    names: dict[str, int] = {}
    for i, b in enumerate(blocks):
        if b.label is not None:
            names[b.label] = i
        names[f"#{i}"] = i
    succs: list[list[int]] = []
    exits: list[bool] = []
    for b in blocks:
        out, leaves = [], False
        for s in b.successors:
            if s in names:
                out.append(names[s])
            else:
                leaves = True
        last = instrs[b.end - 1].mnemonic if b.end > b.start else ""
        if last.startswith(("s_setpc", "s_swappc")) or (not b.successors and last not in ENDS):
            leaves = True
        succs.append(out)
        exits.append(leaves)
    preds: list[list[int]] = [[] for _ in blocks]
    for i, ss in enumerate(succs):
        for s in ss:
            if i not in preds[s]:
                preds[s].append(i)
    block_of = [0] * len(instrs)
    for bi, b in enumerate(blocks):
        for k in range(b.start, b.end):
            block_of[k] = bi
    reach = [False] * len(blocks)
    stack = [0] if blocks else []
    while stack:
        b = stack.pop()
        if reach[b]:
            continue
        reach[b] = True
        stack.extend(s for s in succs[b] if not reach[s])
    return CFG(blocks, succs, preds, exits, block_of, [effects(i.text) for i in instrs],
               [i.text for i in instrs], [i.address for i in instrs], reach)
