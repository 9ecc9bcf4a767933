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

A graph is a pure function of the function's :func:`shape` (its instruction texts
and label names in order) and its instructions' addresses, and is read-only to
everyone who asks for it. So :func:`build_cfg` remembers one per Function object
(the profile, an operator and the gate ask for the same function's graph in turn)
and one per shape (a candidate the static gate checks has the text an operator's
hazard padding checked, with K0's addresses on the lines it kept): a remembered
graph is returned again, or copied with the other addresses.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.memo import IdentityMemo, Memo
from asmevo.targets.amdgpu.program import BasicBlock, Function, Instruction

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


# bounded memos (cleared when full): per Function object (its shape, its graph or None
# while only the shape was asked for), and shape -> a graph of that shape
_MEMO_SIZE = 256
_BY_FUNCTION: IdentityMemo[tuple[tuple, "CFG | None"]] = IdentityMemo(_MEMO_SIZE,
                                                                     "amdgpu.cfg.by_function")
_BY_SHAPE: Memo["CFG"] = Memo("amdgpu.cfg.by_shape", _MEMO_SIZE)


def shape(fn: Function) -> tuple:
    """``fn``'s items as a hashable value that leaves out only addresses and encodings:
    an instruction's text, a label's name (as a 1-tuple, never equal to a text). The
    blocks, the graph and every check over them depend on nothing else of ``fn`` (the
    checks' problems also name ``fn.name`` and the consumer's address)."""
    hit = _BY_FUNCTION.get(fn)
    if hit is not None:
        return hit[0]
    key = tuple([i.text if type(i) is Instruction else (i.name,) for i in fn.items])
    _BY_FUNCTION.put(fn, (key, None))
    return key


def build_cfg(fn: Function) -> CFG:
    """The graph of ``fn``: a block exits when it ends in ``s_setpc``/``s_swappc``, branches
    to a label outside the function, or runs off the end without ``s_endpgm``.

    Remembered (module docstring): treat the graph as read-only."""
    hit = _BY_FUNCTION.get(fn)
    if hit is not None and hit[1] is not None:
        return hit[1]
    key = shape(fn)
    addresses = [i.address for i in fn.instructions]
    cfg = _BY_SHAPE.get(key)
    if cfg is None:
        cfg = _BY_SHAPE.put(key, _build(fn, addresses))
    elif cfg.addresses != addresses:
        cfg = replace(cfg, addresses=addresses)
    _BY_FUNCTION.put(fn, (key, cfg))
    return cfg


def _build(fn: Function, addresses: list[int | None]) -> CFG:
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
               [i.text for i in instrs], addresses, reach)
