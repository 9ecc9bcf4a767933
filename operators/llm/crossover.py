"""``llm_crossover``: two parents' edits in one child, with the rule crossover's conflict rules.

Both parents are K0 plus edits, and edits never add, move or remove a label, so the
labels cut both into the same regions and straight-line pieces
(:func:`asmevo.operators.rules.crossover.matched_pieces`, the rule crossover's own
correspondence: parents whose labels differ are not crossed, and a region whose pieces
or branches do not correspond is left out). Then, per corresponding piece (one basic
block):

- **transfers** (edits on different windows): pieces that parent A left as K0 has them
  and B changed. The child is A plus B's change of each, and the model ports B's lines
  into A's context; for each window the prompt says whether B's lines provably compute
  what A's compute there (the rule crossover's translation validation, over A's
  registers live after the window: then they may be taken as they are) or what
  differs, so the model knows what to adapt. Up to :data:`MAX_WINDOWS` windows, one
  call (those in A's hot windows first; none longer than ``max_window_lines``), one
  ``propose_edits`` answer: an edit per window it chose, applied from the last window
  to the first (so each indexes A's program as shown), waits recomputed for A's
  counters.
- **merge** (both edited the same place, nothing to transfer): the model is shown A's
  version of one hot window and B's version of the same label-bounded region and writes
  one window that keeps what made each faster.

A piece both parents changed is never a transfer: that is a conflict, for the merge.
Every window stays inside one piece, so no edit crosses a label or a branch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from asmevo.edits import Edit
from asmevo.operator import Candidate, OperatorContext, Rejected, crossover
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.operators.llm import prompts
from asmevo.operators.llm.answer import Answer
from asmevo.operators.llm.operators import (LLMOperator, Setup, _label_positions, after_sanitize,
                                     lines_of, pick_window)
from asmevo.operators.llm.parse import AnswerRejected, checked_lines
from asmevo.operators.rules.crossover import equivalent, live_after, matched_pieces

MAX_WINDOWS = 3
TOOL_NAME = "propose_edits"

TOOL = {
    "name": TOOL_NAME,
    "description": "The child's version of some of the numbered windows (leave a window out "
                   "to keep A's lines there). Call exactly once.",
    "input_schema": {
        "type": "object",
        "properties": {
            "edits": {"type": "array", "items": {
                "type": "object",
                "properties": {"window": {"type": "integer", "minimum": 1},
                               "replacement": {"type": "array", "items": {"type": "string"}}},
                "required": ["window", "replacement"], "additionalProperties": False}},
            "rationale": {"type": "string", "description": "One line: why the child is "
                                                           "correct and faster."},
        },
        "required": ["edits", "rationale"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Transfer:
    """A window where A has K0's lines and B changed them."""

    start: int                      # A's window [start, end)
    end: int
    a_lines: tuple[str, ...]
    b_lines: tuple[str, ...]
    live_out: str                   # A's registers live after the window
    validation: str                 # the rule crossover's finding


def _trimmed(a: Sequence[str], b: Sequence[str]) -> tuple[int, int, int, int]:
    """``a[i:len(a)-j]`` against ``b[i:len(b)-j]``: the common prefix and suffix cut, one line
    of each side kept at least (an empty side gives the model nothing to anchor on)."""
    i = 0
    while i < min(len(a), len(b)) - 1 and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i - 1 and a[-1 - j] == b[-1 - j]:
        j += 1
    return i, len(a) - j, i, len(b) - j


def transfers(fa, fb, fk) -> list[Transfer] | str:
    """The pieces A left as K0 has them and B changed (see the module docstring), or why
    the parents cannot be crossed."""
    ab = matched_pieces(fa, fb)
    if isinstance(ab, str):
        return ab
    ak = matched_pieces(fa, fk)
    if isinstance(ak, str):
        return ak
    k0_piece = {pa: pk for pa, pk in ak}
    ta, tb, tk = ([i.text for i in f.instructions] for f in (fa, fb, fk))
    live = Liveness(fa, build_cfg(fa))
    out = []
    for pa, pb in ab:
        pk = k0_piece.get(pa)
        a, b = ta[pa[1]:pa[2]], tb[pb[1]:pb[2]]
        if pk is None or a == b or a != tk[pk[1]:pk[2]] or not a or not b:
            continue
        i, e, _, f = _trimmed(a, b)
        start, end = pa[1] + i, pa[1] + e
        mask = live_after(live, start, end)
        why = equivalent(a[i:e], b[i:f], mask)
        out.append(Transfer(start, end, tuple(a[i:e]), tuple(b[i:f]), R.render(mask) or "-",
                            "B's lines compute what A's compute here (translation validation): "
                            "they may be taken as they are" if why is None else
                            f"B's lines differ from A's here ({why}): adapt them to A"))
    return out


def transfer_text(ts: Sequence[Transfer], speedups: tuple[str, str], fn_name: str) -> str:
    """The task of a transfer crossover: every window with both versions."""
    out = ["## Task: crossover of two parents (edits on different windows)",
           f"Parent A runs at {speedups[0]} of K0, parent B at {speedups[1]}; both are correct. "
           f"B changed the windows below of `{fn_name}`; A still has K0's lines there. Write "
           "A's version of each window that brings B's improvement into A, exactly "
           "equivalent to A's lines in A's context (the registers live after each window "
           "must hold what A's lines leave there)."]
    for k, t in enumerate(ts, 1):
        out += [f"### Window {k}: A's instructions [{t.start}, {t.end})",
                "\n".join(f"  {x}" for x in t.a_lines),
                "B's version:", "\n".join(f"  {x}" for x in t.b_lines) or "  (deleted)",
                f"live after the window in A: {t.live_out}", t.validation]
    return "\n".join(out)


@crossover("llm_crossover", targets=("amdgpu",))
class LLMCrossover(LLMOperator):
    """Two parents' edits in one child (see the module docstring)."""

    def crossover(self, a, b, context: OperatorContext) -> Edit | tuple[Edit, ...] | Rejected:
        pa, pb = context.program(a), context.program(b)
        fn_name = context.kernel
        fa, fb = pa.function(fn_name), pb.function(fn_name)
        found = transfers(fa, fb, context.k0.function(fn_name))
        if isinstance(found, str):
            return self._reject(context, f"parents not crossed: {found}")
        cfg = self.config
        found = [t for t in found if t.end - t.start <= cfg.max_window_lines
                 and len(t.b_lines) <= cfg.max_replacement_lines]
        hot = {i for fn, s, e in context.windows(a) if fn == fn_name for i in range(s, e)}
        found.sort(key=lambda t: not hot & set(range(t.start, t.end)))   # hot ones first
        setup = self.setup(context, a)
        if found:
            return self._transfer(a, b, context, setup, pa, found[:MAX_WINDOWS])
        return self._merge(a, b, context, setup, pa, pb)

    def _transfer(self, a, b, context, setup: Setup, pa, ts: list[Transfer]):
        fn = pa.function(context.kernel)
        user = "\n\n".join(x for x in [
            transfer_text(ts, (_shown(a), _shown(b)), fn.name),
            prompts.notes_section(self.notes(context)), setup.extra.inspirations,
            f"Call {TOOL_NAME} with the windows you change."] if x)
        request = prompts.request(setup.config, self.kernel_text(context), user,
                                  setup.extra.variant, tool=TOOL)

        def sanitize(answer: Answer) -> tuple[Edit, ...]:
            return windows_of(answer, ts, fn, pa, self.name, setup)

        edits, cid = self.ask(context, request, setup, individuals=[a.id, b.id],
                              sanitize=sanitize, tool=TOOL_NAME)
        if isinstance(edits, Rejected):
            return edits
        edits = tuple(Edit(e.function, e.start, e.end, e.lines, e.operator,
                           f"{e.note} [llm call {cid[:12]}]") for e in edits)
        return self.duplicate(context, a.edits + edits) or edits

    def _merge(self, a, b, context, setup: Setup, pa, pb):
        window = pick_window(self, context, pa, a)
        if window is None:
            return self._reject(context, "no window to edit")
        fn_name, start, end = window
        fa, fb = pa.function(fn_name), pb.function(fn_name)
        bs, be = corresponding_window(fa, fb, start, end)
        lines_a = [i.text for i in fa.instructions[start:end]]
        lines_b = [i.text for i in fb.instructions[bs:be]]
        if lines_a == lines_b:
            return self._reject(context, f"parents agree on [{start}, {end}): nothing to cross")
        request = prompts.crossover_request(
            setup.config, kernel_text=self.kernel_text(context), function_a=fa, start=start,
            end=end, lines_b=lines_b, speedup_a=_speedup(a), speedup_b=_speedup(b),
            notes=self.notes(context), extra=setup.extra)
        p, cid = self.ask(context, request, setup, individuals=[a.id, b.id],
                          sanitize=lines_of(setup, target=pa.source.target,
                                            labels=set(fa.labels), original=lines_a + lines_b))
        return p if isinstance(p, Rejected) else self.edit(context, a, setup, pa, window, p, cid)


def windows_of(answer: Answer, ts: Sequence[Transfer], fn, program, operator: str,
               setup: Setup) -> tuple[Edit, ...]:
    """The ``propose_edits`` answer as edits, last window first, each checked in the safe
    order (shape, then the assembler) and its waits recomputed; AnswerRejected else."""
    cfg = setup.config
    uses = [u for u in answer.tool_uses if u.name == TOOL_NAME]
    if len(uses) != 1 or not isinstance(uses[0].input, dict):
        raise AnswerRejected("no_tool", f"answer has no single {TOOL_NAME} call with an object")
    data = uses[0].input
    items, rationale = data.get("edits"), data.get("rationale", "")
    if set(data) - {"edits", "rationale"} or not isinstance(items, list) \
            or not isinstance(rationale, str):
        raise AnswerRejected("no_tool", f"{TOOL_NAME} takes edits (a list) and rationale")
    lines_total = sum(len(x.get("replacement") or []) for x in items if isinstance(x, dict))
    if lines_total > cfg.max_replacement_lines:
        raise AnswerRejected("rejected", f"{lines_total} lines, more than "
                                         f"{cfg.max_replacement_lines}")
    chosen: dict[int, list[str]] = {}
    for x in items:
        k, lines = (x.get("window"), x.get("replacement")) if isinstance(x, dict) else (0, 0)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= len(ts) or k in chosen \
                or set(x) - {"window", "replacement"} or not isinstance(lines, list) \
                or not all(isinstance(t, str) for t in lines):
            raise AnswerRejected("no_tool", f"edits must be distinct windows 1..{len(ts)}, each "
                                 "with a replacement (a list of strings)")
        if sum(map(len, lines)) > cfg.max_replacement_chars:
            raise AnswerRejected("rejected", f"window {k}: more than "
                                             f"{cfg.max_replacement_chars} characters")
        chosen[k] = lines
    note = setup.note(" ".join(rationale.split())[:200])
    out = []
    for k in sorted(chosen, key=lambda k: -ts[k - 1].start):
        t = ts[k - 1]
        lines = checked_lines(chosen[k], target=program.source.target, labels=set(fn.labels),
                              original=list(t.a_lines + t.b_lines))
        if lines != [" ".join(x.split()) for x in t.a_lines]:
            out.append(after_sanitize(Edit(fn.name, t.start, t.end, tuple(lines), operator,
                                           note), program))
    if not out:
        raise AnswerRejected("rejected", "the answer changes no window")
    return tuple(out)


def corresponding_window(fn_a, fn_b, start: int, end: int) -> tuple[int, int]:
    """B's range for A's window ``[start, end)``, anchored on the labels around it.

    Edits never move labels, so the same labels bound the same region in both
    parents; the offsets from the label before and to the label after are kept
    when they fit, else B's whole label-bounded region is used.
    """
    la, lb = dict((n, i) for i, n in _label_positions(fn_a)), dict(
        (n, i) for i, n in _label_positions(fn_b))
    before = max(((i, n) for n, i in la.items() if i <= start), default=(0, None))
    after = min(((i, n) for n, i in la.items() if i >= end), default=(len(fn_a.instructions), None))
    b_lo = lb.get(before[1], 0) if before[1] else 0
    b_hi = lb.get(after[1], len(fn_b.instructions)) if after[1] else len(fn_b.instructions)
    s = b_lo + (start - before[0])
    e = b_hi - (after[0] - end)
    if not b_lo <= s <= e <= b_hi:
        return b_lo, b_hi
    return s, e


def _speedup(ind: Candidate) -> float | None:
    return float(ind.fitness) if ind.fitness else None


def _shown(ind: Candidate) -> str:
    return f"{ind.fitness:.3f}x" if ind.fitness else "unknown"
