"""The control-flow graph of one function, with every instruction's effects.

:meth:`Function.blocks` names successors by label (or ``#i`` for an unlabeled
block); the analyses want indices both ways, the block of each instruction and
the decoded effects, so they share this one view.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.targets.amdgpu.program import BasicBlock, Function, Instruction, Label


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


def function_blocks(fn: Function) -> list[BasicBlock]:
    """Exactly :meth:`Function.blocks`, in one pass (that method re-lists the
    instructions once per block, which dominates on large kernels)."""
    instrs = fn.instructions
    spans: list[tuple[str | None, int, int]] = []
    label: str | None = None
    start = idx = 0
    prev: Instruction | None = None
    for item in fn.items:
        if isinstance(item, Label):
            if idx > start or label is not None:
                spans.append((label, start, idx))
            label, start, prev = item.name, idx, None
            continue
        if prev is not None and prev.ends_block:
            if idx > start or label is not None:
                spans.append((label, start, idx))
            label, start = None, idx
        prev = item
        idx += 1
    if idx > start or label is not None:
        spans.append((label, start, idx))
    out = []
    for i, (lab, s, e) in enumerate(spans):
        succ: list[str] = []
        last = instrs[e - 1] if e > s else None
        if last is not None and last.is_branch:
            succ.append(last.branch_target or "")
        falls = last is None or not last.ends_block or (
            last.is_branch and last.mnemonic != "s_branch")
        if falls and i + 1 < len(spans):
            nxt = spans[i + 1][0]
            succ.append(nxt if nxt is not None else f"#{i + 1}")
        out.append(BasicBlock(lab, s, e, tuple(succ)))
    return out


def build_cfg(fn: Function) -> CFG:
    blocks = function_blocks(fn)
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
        if last.startswith(("s_setpc", "s_swappc")) or (not b.successors and last not in
                                                         ("s_endpgm", "s_endpgm_saved",
                                                          "s_trap")):
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
