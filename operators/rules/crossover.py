"""Crossover of two individuals of one K0: ``window_crossover`` and ``block_crossover``.

Both parents are K0 plus edits. Edits never add, remove or move a label, so
the labels cut both parents' code into the same sequence of *regions*
(label to label), and a region's straight-line pieces (split after each
branch) correspond one to one when their branches agree. The child is parent
``a`` plus one edit (the engine appends it to ``a``'s edits) that replaces
code of ``a`` with ``b``'s version of the same place:

- ``window_crossover``: one differing stretch inside one basic block (one
  opcode of a line diff, or the whole differing span of the block), so that
  improvements the two parents made in *different parts of one block* combine;
- ``block_crossover``: block-level uniform crossover within the one-window
  ``Edit`` model: each region where the parents differ is a candidate, one is
  chosen uniformly (rng) and ``b``'s version of the whole region is taken.
  (Several regions at once would need several windows, which one Edit cannot
  express; repeated crossovers over generations compose them.)

Preserves, by translation validation rather than trust in either parent: the
replaced code and ``b``'s code are executed symbolically from the same entry
state (every register a symbol, memory a version). Each instruction becomes a
term over the terms of everything it reads (operands, implicit registers such
as EXEC/VCC/SCC/M0, and the memory version for loads); stores, atomics,
barriers, messages and branches form an ordered side-effect list and advance
the memory version. The exchange is made only when every register live after
the window (in ``a``) has the same term in both versions and the side-effect
lists are identical: then the child computes exactly what ``a`` computes,
whatever edits either parent carries. Waits are then re-derived for ``a``'s
counter state (``b``'s came from ``b``'s context) and hazards padded and gated
by :func:`asmevo.operators.rules.common.seal`.

Why it can be faster: each parent may carry a different improvement (a better
schedule of one block, a merged load, relaxed waits); exchange puts two
improvements into one child without re-discovering either.
"""
from __future__ import annotations

import difflib
import re

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.program import Function, Label
from asmevo.operator import OperatorContext, Rejected, crossover
from asmevo.operators.rules.common import is_wait, pinned_waits, seal

_REG_TEXT = re.compile(r"(?<![\w.])(?:(?:s|v|a|ttmp)(?:\[\d+(?::\d+)?\]|\d+)|vcc_lo|vcc_hi|vccz|"
                       r"vcc|exec_lo|exec_hi|execz|exec|m0|scc|flat_scratch_lo|flat_scratch_hi|"
                       r"flat_scratch|xnack_mask_lo|xnack_mask_hi|xnack_mask)(?![\w])")
_SIDE_EFFECT = ("BARRIER", "MSG", "END", "BRANCH", "OTHER")


class NotEquivalent(Refused):
    """Internal: the two versions cannot be shown to compute the same thing."""


# --- translation validation ---------------------------------------------------------------

def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Symbolic:
    """Straight-line symbolic execution into interned terms (one table per check)."""

    def __init__(self):
        self.table: dict[tuple, int] = {}

    def term(self, t: tuple) -> int:
        return self.table.setdefault(t, len(self.table))

    def run(self, texts) -> tuple[dict[int, int], list[int], list[int]]:
        """(register bit -> term, side effects in order, loads as a sorted multiset)
        of ``texts`` from the symbolic entry state; waits and ``s_nop`` are timing
        only and ignored. Loads are compared as a multiset: one whose value is dead
        still touches memory (and may fault), so the same accesses must remain."""
        regs: dict[int, int] = {}
        mem = self.term(("mem0",))
        side: list[int] = []
        loads: list[int] = []

        def val(bit: int) -> int:
            v = regs.get(bit)
            return v if v is not None else self.term(("in", bit))

        for text in texts:
            e = effects(text)
            if e.klass in ("WAITCNT", "NOP"):
                continue
            if e.unknown or R.count(e.writes) > 64:
                raise NotEquivalent(f"cannot model {text!r}")
            ops = []
            for k, (op, m) in enumerate(zip(e.operands, e.op_masks)):
                shape = _REG_TEXT.sub("R", op)
                if k < e.ndefs:
                    ops.append(("def", shape))
                else:
                    ops.append((shape, tuple(val(b) for b in _bits(m))))
            implicit = tuple((b, val(b)) for b in _bits(e.reads & ~e.use_mask))
            reads_memory = e.mem_load or (e.mem_store and e.mem not in (None, "msg"))
            node = self.term((e.mnemonic, e.modifiers, tuple(ops), implicit,
                              mem if reads_memory or e.fence else None))
            def_mask = 0
            for k in range(e.ndefs):
                for idx, b in enumerate(_bits(e.op_masks[k])):
                    regs[b] = self.term(("def", node, k, idx))
                def_mask |= e.op_masks[k]
            for b in _bits(e.writes & ~def_mask):
                regs[b] = self.term(("imp", node, b))
            if e.mem_store or e.fence or e.is_branch or e.klass in _SIDE_EFFECT \
                    or e.mem in ("msg", "gds"):
                side.append(node)
                mem = self.term(("mem", mem, node))
            elif e.mem is not None:
                loads.append(node)
        return regs, side, sorted(loads)


def equivalent(old: list[str], new: list[str], live_out: int) -> str | None:
    """None when ``new`` provably computes what ``old`` computes (every register of
    ``live_out`` and every side effect, in order), else the first difference."""
    sym = Symbolic()
    try:
        ra, sa, la = sym.run(old)
        rb, sb, lb = sym.run(new)
    except NotEquivalent as exc:
        return str(exc)
    if sa != sb:
        return "the side effects (stores, barriers, branches) differ"
    if la != lb:
        return "the memory reads differ"
    for b in _bits(live_out):
        va = ra.get(b, sym.term(("in", b)))
        vb = rb.get(b, sym.term(("in", b)))
        if va != vb:
            return f"{R.render(1 << b)} differs after the window"
    return None


# --- corresponding places in two parents -------------------------------------------------

def pieces(fn: Function) -> list[tuple[int, int, int]]:
    """``(region, start, end)`` straight-line pieces: regions are label to label,
    pieces are split after each block-ending instruction."""
    out: list[tuple[int, int, int]] = []
    region, start, idx = 0, 0, 0
    for item in fn.items:
        if isinstance(item, Label):
            if idx > start:
                out.append((region, start, idx))
            region, start = region + 1, idx
            continue
        idx += 1
        if item.ends_block:
            out.append((region, start, idx))
            start = idx
    if idx > start:
        out.append((region, start, idx))
    return out


def _terminator(texts: list[str]) -> str | None:
    if texts:
        e = effects(texts[-1])
        if e.is_branch or e.klass in ("END", "BRANCH"):
            return texts[-1]
    return None


def matched_pieces(fa: Function, fb: Function):
    """Pairs of corresponding pieces ``((ra, sa, ea), (rb, sb, eb))`` of two parents,
    or a reason string when their label structure differs."""
    if fa.labels != fb.labels:
        return "the parents' labels differ"
    pa, pb = pieces(fa), pieces(fb)
    by_a: dict[int, list] = {}
    by_b: dict[int, list] = {}
    for p in pa:
        by_a.setdefault(p[0], []).append(p)
    for p in pb:
        by_b.setdefault(p[0], []).append(p)
    ta = [i.text for i in fa.instructions]
    tb = [i.text for i in fb.instructions]
    out = []
    for region in sorted(set(by_a) | set(by_b)):
        xa, xb = by_a.get(region, []), by_b.get(region, [])
        if len(xa) != len(xb):
            continue
        if any(_terminator(ta[a[1]:a[2]]) != _terminator(tb[b[1]:b[2]])
               for a, b in zip(xa, xb)):
            continue
        out.extend(zip(xa, xb))
    return out


# --- building the exchange ---------------------------------------------------------------

def live_after(live: Liveness, start: int, end: int) -> int:
    return live.after(end - 1) if end > start else live.before(start)


def exchange(fa: Function, fb: Function, live: Liveness, a_span: tuple[int, int],
             b_span: tuple[int, int]) -> list[str] | str:
    """``b``'s lines for ``a``'s span, with waits re-derived for ``a``'s counter state,
    or why the exchange is refused."""
    sa, ea = a_span
    sb, eb = b_span
    old = [i.text for i in fa.instructions[sa:ea]]
    new = [i.text for i in fb.instructions[sb:eb]]
    if old == new:
        return "the parents agree here"
    why = equivalent(old, new, live_after(live, sa, ea))
    if why:
        return f"not equivalent: {why}"
    if ea > sa:
        entry, exit_ = window_states(fa, sa, ea)
        pinned = pinned_waits(new)
        new = recompute_waitcnts([t for k, t in enumerate(new) if not is_wait(t) or k in pinned],
                                 entry, exit_, keep=True)
    return new


def diff_spans(ta: list[str], tb: list[str], pa, pb) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Candidate windows of one piece pair: every differing opcode of a line diff,
    then the whole differing span (common prefix and suffix dropped)."""
    _, sa, ea = pa
    _, sb, eb = pb
    A, B = ta[sa:ea], tb[sb:eb]
    if A == B:
        return []
    ops = [op for op in difflib.SequenceMatcher(None, A, B, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    out = []
    for _, i1, i2, j1, j2 in ops:
        if i1 == i2 or j1 == j2:            # an insertion or deletion: take one line of
            if i1 > 0 and j1 > 0:           # the (equal) context with it, so that
                i1, j1 = i1 - 1, j1 - 1     # neither side is empty
            elif i2 < len(A) and j2 < len(B):
                i2, j2 = i2 + 1, j2 + 1
            else:
                continue
        out.append(((sa + i1, sa + i2), (sb + j1, sb + j2)))
    p = 0
    while p < min(len(A), len(B)) and A[p] == B[p]:
        p += 1
    s = 0
    while s < min(len(A), len(B)) - p and A[-1 - s] == B[-1 - s]:
        s += 1
    if p + s >= min(len(A), len(B)):        # one side would be empty: keep context
        if p > 0:
            p -= 1
        else:
            s -= 1
    whole = ((sa + p, ea - s), (sb + p, eb - s))
    if whole not in out and whole[0][1] > whole[0][0] and whole[1][1] > whole[1][0]:
        out.append(whole)
    return out


class _Crossover:
    name = ""

    def __init__(self, tries: int = 12):
        if tries < 1:
            raise ValueError("tries must be >= 1")
        self.tries = tries

    def _parents(self, a, b, context):
        pa, pb = context.program(a), context.program(b)
        fa, fb = pa.function(context.kernel), pb.function(context.kernel)
        matched = matched_pieces(fa, fb)
        return pa, fa, fb, matched

    def _try(self, program, fa, fb, live, candidates, note) -> Edit | list[str]:
        reasons = []
        for a_span, b_span in candidates[:self.tries]:
            lines = exchange(fa, fb, live, a_span, b_span)
            if isinstance(lines, str):
                reasons.append(f"{a_span}: {lines}")
                continue
            start, end = a_span
            result = seal(program, fa.name, start, end, lines, operator=self.name,
                          note=f"{note} [{start}:{end}] <- b[{b_span[0]}:{b_span[1]}]")
            if isinstance(result, Edit):
                return result
            reasons.append(f"{a_span}: {result}")
        return reasons


@crossover("window_crossover", targets=("amdgpu",))
class WindowCrossover(_Crossover):
    """Take one differing stretch of one basic block from ``b`` (see the module doc)."""

    def crossover(self, a, b, context: OperatorContext) -> Edit | Rejected:
        program, fa, fb, matched = self._parents(a, b, context)
        if isinstance(matched, str):
            return context.reject(matched)
        ta = [i.text for i in fa.instructions]
        tb = [i.text for i in fb.instructions]
        hot = set()
        for _, s, e in context.windows(a):
            hot.update(range(s, e))
        cands = []
        for pa, pb in matched:
            cands.extend(diff_spans(ta, tb, pa, pb))
        if not cands:
            return context.reject("the parents do not differ inside any matching block")
        context.rng.shuffle(cands)
        cands.sort(key=lambda c: not (set(range(*c[0])) & hot or c[0][0] in hot))
        live = Liveness(fa, build_cfg(fa))
        result = self._try(program, fa, fb, live, cands, "window from b")
        if isinstance(result, Edit):
            return result
        return context.reject("; ".join(result[:3]))


@crossover("block_crossover", targets=("amdgpu",))
class BlockCrossover(_Crossover):
    """Take ``b``'s version of one region (label to label) where the parents differ."""

    def crossover(self, a, b, context: OperatorContext) -> Edit | Rejected:
        program, fa, fb, matched = self._parents(a, b, context)
        if isinstance(matched, str):
            return context.reject(matched)
        ta = [i.text for i in fa.instructions]
        tb = [i.text for i in fb.instructions]
        regions: dict[int, list] = {}
        for pa, pb in matched:
            regions.setdefault(pa[0], []).append((pa, pb))
        differing = []
        for region, pairs in sorted(regions.items()):
            if any(ta[pa[1]:pa[2]] != tb[pb[1]:pb[2]] for pa, pb in pairs):
                differing.append(pairs)
        if not differing:
            return context.reject("the parents do not differ in any matching region")
        context.rng.shuffle(differing)
        live = Liveness(fa, build_cfg(fa))
        reasons = []
        for pairs in differing[:self.tries]:
            # every piece of the region must be equivalent on its own
            why = None
            for pa, pb in pairs:
                old, new = ta[pa[1]:pa[2]], tb[pb[1]:pb[2]]
                if old != new:
                    why = equivalent(old, new, live_after(live, pa[1], pa[2]))
                    if why:
                        break
            if why:
                reasons.append(f"region {pairs[0][0][0]}: not equivalent: {why}")
                continue
            lines: list[str] = []
            for pa, pb in pairs:
                part = exchange(fa, fb, live, (pa[1], pa[2]), (pb[1], pb[2]))
                lines.extend(ta[pa[1]:pa[2]] if isinstance(part, str) else part)
            start, end = pairs[0][0][1], pairs[-1][0][2]
            result = seal(program, fa.name, start, end, lines, operator=self.name,
                          note=f"region {pairs[0][0][0]} from b")
            if isinstance(result, Edit):
                return result
            reasons.append(f"region {pairs[0][0][0]}: {result}")
        return context.reject("; ".join(reasons[:3]))
