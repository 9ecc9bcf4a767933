"""What the structural (cross-block) rule operators share.

A structural rewrite touches several places at once: code hoisted out of a loop
leaves the body and lands in the preheader, a register renamed across blocks
changes every block it lives in. The ``Edit`` model replaces one window of
instructions and never crosses a label, so such a rewrite is a *tuple* of Edits
applied together (:func:`asmevo.edits.as_edits`): :func:`seal_edits` pads each
window's hazards, gates the whole result once, and returns the edits in the
order they apply (later windows first, so that every window indexes the program
it is applied to as it was before the proposal).

:class:`Flow` bundles the analyses the operators ask: the CFG, dominators,
natural loops, full-def and lane-aware liveness (:mod:`...analysis.lanes`).
:func:`assembles` checks that rewritten lines assemble for the target (an
operand combination the constant-bus rules forbid is caught here, not by a
failed build).
"""
from __future__ import annotations


from asmevo.edits import Edit
from asmevo.memo import cached
from asmevo.operator import Rejected
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg
from asmevo.targets.amdgpu.analysis.dominance import Dominators, Loop, natural_loops
from asmevo.targets.amdgpu.analysis.effects import Effects, split_operands
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.gate import static_gate
from asmevo.targets.amdgpu.program import Function, Instruction, Program
from asmevo.targets.amdgpu.sanitize import MAX_LINES, UnsafeEdit, encode_lines
from asmevo.operators.rules.common import SealError, is_fixed_point, pad_hazards, trim_window

ALU = ("SALU", "VALU", "VALU_TRANS", "DOT")
PLAIN_SGPRS = (1 << 102) - 1          # s0..s101


class Flow:
    """The analyses of one function that structural operators share (lazily)."""

    def __init__(self, program: Program, function: str):
        self.program = program
        self.fn: Function = program.function(function)
        self.cfg: CFG = build_cfg(self.fn)
        self._dom = self._loops = self._live = self._lanes = None

    @property
    def dom(self) -> Dominators:
        if self._dom is None:
            self._dom = Dominators(self.cfg)
        return self._dom

    @property
    def loops(self) -> list[Loop]:
        if self._loops is None:
            self._loops = natural_loops(self.cfg, self.dom)
        return self._loops

    @property
    def live(self) -> Liveness:
        if self._live is None:
            self._live = Liveness(self.fn, self.cfg)
        return self._live

    @property
    def lanes(self) -> LaneLiveness:
        if self._lanes is None:
            self._lanes = LaneLiveness(self.fn, self.cfg)
        return self._lanes

    def text(self, i: int) -> str:
        return self.cfg.texts[i]

    def eff(self, i: int) -> Effects:
        return self.cfg.effects[i]

    def exec_writes(self, indices) -> bool:
        return any(self.cfg.effects[i].writes & R.EXEC_MASK for i in indices)


def pure_alu(e: Effects) -> bool:
    """An ALU instruction with no memory, counter, EXEC or ordering effect: what may be
    moved, duplicated or deleted when its registers allow."""
    return (e.klass in ALU and not e.unknown and not e.mem and not e.counters
            and not e.writes & R.EXEC_MASK and not is_fixed_point(e.text) and e.writes != 0
            and not e.mnemonic.startswith(("v_readlane", "v_writelane", "v_readfirstlane",
                                           "v_movrel", "v_swap", "s_movrel", "s_getpc")))


def render(mnemonic: str, ops, mods=()) -> str:
    text = mnemonic + (" " + ", ".join(ops) if ops else "")
    return text + (" " + " ".join(mods) if mods else "")


def parts(text: str) -> tuple[str, list[str], list[str]] | None:
    """(mnemonic, operands, modifiers) when :func:`render` gives ``text`` back exactly."""
    m, _, rest = text.partition(" ")
    ops, mods = split_operands(rest.strip()) if rest else ([], [])
    if render(m, ops, mods) != text:
        return None
    return m, ops, mods


@cached("operators.rules.structure._assembles", 8192)
def _assembles(lines: tuple[str, ...], target) -> str | None:
    try:
        encode_lines(list(lines), target)
    except UnsafeEdit as exc:
        return str(exc)
    return None


def assembles(lines, target) -> str | None:
    """None when every line assembles on its own for ``target``, else the first error."""
    lines = tuple(dict.fromkeys(lines))
    return _assembles(lines, target) if lines else None


def seal_edits(program: Program, function: str, windows, *, operator: str,
               note: str) -> tuple[Edit, ...] | Rejected:
    """The edits replacing every ``(start, end, lines)`` window (original indices, not
    overlapping) together, each hazard-padded, the result gated once; or why not."""
    windows = sorted(windows, key=lambda w: (-w[0], -w[1]))
    for (s1, e1, _), (s2, e2, _) in zip(windows[1:], windows):
        if e1 > s2 or (s1 == s2 and e1 == e2):
            return Rejected(f"windows [{s1}, {e1}) and [{s2}, {e2}) overlap")
    edits: list[Edit] = []
    current = program
    for start, end, lines in windows:
        lines = [str(t).strip() for t in lines]
        old = [i.text for i in current.function(function).instructions[start:end]]
        try:
            lines = pad_hazards(current, function, start, end, lines)
        except SealError as exc:
            return Rejected(str(exc))
        if lines == old:
            continue
        s, e, new = trim_window(start, end, old, lines)
        if len(new) > MAX_LINES:
            return Rejected(f"a window of {len(new)} lines is more than an edit may carry "
                            f"({MAX_LINES})")
        edits.append(Edit(function, s, e, tuple(new), operator=operator, note=note))
        current = current.replace_window(function, s, e, [Instruction(text=t) for t in new])
    if not edits:
        return Rejected("the rewrite reproduces the code unchanged")
    verdict = static_gate(current, program.source.target)
    if verdict is not None:
        return Rejected(f"static gate rejects the rewrite: {verdict}")
    return tuple(edits)


def reaching_writes(flow: Flow, i: int, mask: int, blocks=None,
                    ends=None) -> tuple[set[int], bool]:
    """The instructions whose write of ``mask`` may be the last one before ``i`` (on some
    path), and whether some path reaches ``i`` from the function entry or from outside
    ``blocks`` (a set of block indices; None: the whole function) without such a write.
    ``ends(k)`` says whether write ``k`` hides the writes before it (default: every
    write does; a partial one may not)."""
    cfg = flow.cfg
    found: set[int] = set()
    outside = False
    seen: set[int] = set()
    work = [(cfg.block_of[i], i)]           # (block, scan backward from this index, exclusive)
    while work:
        bi, upto = work.pop()
        b = cfg.blocks[bi]
        hit = False
        for k in range(upto - 1, b.start - 1, -1):
            if cfg.effects[k].writes & mask:
                found.add(k)
                if ends is None or ends(k):
                    hit = True
                    break
        if hit:
            continue
        preds = cfg.preds[bi]
        if bi == 0 or not preds:
            outside = True
        for p in preds:
            if blocks is not None and p not in blocks:
                outside = True
                continue
            if p not in seen:
                seen.add(p)
                work.append((p, cfg.blocks[p].end))
    return found, outside


def between(flow: Flow, i: int, j: int) -> list[int]:
    """Instruction indices on some path from just after ``i`` to just before ``j`` that
    does not run ``i`` again: what may change a value ``i`` computed (or read) before
    ``j`` sees it, when ``i`` dominates ``j``."""
    cfg = flow.cfg
    bi, bj = cfg.block_of[i], cfg.block_of[j]
    if bi == bj and i < j:
        return list(range(i + 1, j))

    def walk(start: int, edges) -> set[int]:
        seen: set[int] = set()
        work = [b for b in edges[start] if b != bi]
        while work:
            b = work.pop()
            if b not in seen:
                seen.add(b)
                work.extend(x for x in edges[b] if x != bi)
        return seen

    mid = walk(bi, cfg.succs) & walk(bj, cfg.preds)      # whole blocks on such a path
    out = set(range(i + 1, cfg.blocks[bi].end)) | set(range(cfg.blocks[bj].start, j))
    for x in mid:
        out.update(range(cfg.blocks[x].start, cfg.blocks[x].end))
    out.discard(j)
    return sorted(out)


class StructuralMutation:
    """What the structural mutation operators share: a ``tries`` bound on the candidates
    one call seals, and no crossover."""

    name = ""

    def __init__(self, tries: int = 6):
        if tries < 1:
            raise ValueError("tries must be >= 1")
        self.tries = tries


class WindowedMutation(StructuralMutation):
    """A structural mutation that looks at the ``top_windows`` hottest windows."""

    def __init__(self, top_windows: int = 8, tries: int = 6):
        super().__init__(tries)
        if top_windows < 1:
            raise ValueError("top_windows must be >= 1")
        self.top_windows = top_windows


def first_result(context, attempts):
    """The first Edit (or tuple of Edits) among ``attempts`` -- ``(label, Edit | tuple |
    reason)`` pairs, tried in order and lazily -- or ``context.reject`` with the first
    reasons."""
    reasons = []
    for label, got in attempts:
        if isinstance(got, (Edit, tuple)):
            return got
        reasons.append(f"{label}: {got}" if label else str(got))
    return context.reject("; ".join(reasons[:3]) or "no candidate")
