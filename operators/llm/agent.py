"""``llm_agent``: one bounded, tool-using conversation per proposal, edits stacked.

The model gets six tools: ``show`` and ``analyze`` read the candidate (its
listing with the per-line profile; liveness, outstanding counters, hazard wait
states), ``profile`` lists the current best's hot windows with their share of the
time and ``next_window`` hands out the next of them, ``try_edit`` has the *engine*
verify and time an edit (the context's ``try_edit`` callback: an archived
evaluation, counted in the run's budget; the operator never runs anything),
``submit`` ends the conversation.

Stacking: a try that is equal to K0 and faster than the best so far is *accepted*:
it becomes the base of every later tool call (the next try goes on top of it, and
``show``, ``analyze``, ``profile`` and ``next_window`` see the program with it), so
one conversation can build edit 2 on edit 1 and move on to the next window. The
operator returns the stack (one edit, or a tuple applied in order), with an untried
final edit on top where ``submit`` gives one (judged later like any proposal); no
accepted edit and nothing untried: nothing.

Novelty: a try whose edit chain, normalized, was tried already (in this
conversation, or anywhere in the run's committed generations:
``OperatorContext.seen``) is refused without being sent to verification, and costs
no try. The same built code is served by the engine's verdict cache anyway.

Bounds, all from the config: turns, tries, tokens and dollars per conversation
(checked before each turn: a turn is not sent once the conversation's tokens
reach the limit, or when its spend plus the last turn's cost would pass the
dollar limit), tool calls per turn, and the run's ``budget.llm_dollars``.

Resume: every turn's call has its own deterministic id (the proposal's call id
plus the turn). A turn whose answer the archive holds is not sent again: the
answer is read back and its tools run again (``show``/``analyze``/``profile`` are
pure, ``try_edit`` comes back from the verdict cache), so the stack, and the next
request, are the same bytes as in the uninterrupted run, and only the first
unanswered turn is sent.
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace

from asmevo.edits import Edit, instruction_count
from asmevo.operator import (OperatorContext, OperatorUnusable, Rejected, TryResult, mutation,
                             normalized_line, novelty_key)
from asmevo.operators.llm import agent_prompts, agent_tools
from asmevo.operators.llm.answer import Answer, ToolUse
from asmevo.operators.llm.client import wire_body
from asmevo.operators.llm.operators import BUDGET_SPENT, LLMOperator, after_sanitize, window_profile
from asmevo.operators.llm.parse import AnswerRejected, checked_lines
from asmevo.operators.llm.pricing import Usage, cost
from asmevo.operators.llm.prompts import for_model
from asmevo.operators.llm.spend import CallRecord, call_id, hook_call, request_text
from asmevo.targets.amdgpu.errors import Refused

log = logging.getLogger("asmevo.llm")


class ToolRefused(Refused):
    """A tool call that cannot be carried out; the reason goes back to the model."""


class NoChange(ToolRefused):
    """An edit whose lines are the window's own."""


@mutation("llm_agent", targets=("amdgpu",))
class LLMAgent(LLMOperator):
    """A conversation with tools per proposal (see the module docstring)."""

    def mutate(self, individual, context: OperatorContext) -> Edit | tuple | Rejected:
        program, window = self.hot_window(individual, context)
        if isinstance(window, Rejected):
            return window
        return Conversation(self, context, individual, program, window).run()


class Conversation:
    """The state of one conversation: transcript, tries, the stack of accepted edits, spend."""

    def __init__(self, op: LLMAgent, context: OperatorContext, individual, program, window):
        self.op, self.ctx, self.individual = op, context, individual
        self.setup = op.setup(context, individual)
        self.cfg = self.setup.config
        self.fn_name = window[0]
        self.program, self.fn = program, program.function(self.fn_name)
        context.where.setdefault("operator", op.name)
        self.ind_id = individual.id
        self.tries: list[tuple[tuple[Edit, ...], TryResult]] = []
        self.tried: dict[str, int] = {}    # novelty key of an evaluated try -> its number
        self.stack: list[tuple[Edit, TryResult, tuple]] = []   # accepted: edit, result, asked
        self.best = individual.fitness or 1.0
        self.shown = [window[1:]]          # windows handed out, in the current program
        self.submitted: Edit | None = None
        self.done = False                  # submit was called
        self.call = ""                     # the current turn's call id
        self.turn = 0
        self.spent = 0.0
        self.tokens = 0
        self.last_cost = 0.0
        self.ended = ""
        self.unusable = False              # ended by a call that says the setup cannot work
        self.messages = [{"role": "user", "content": [
            {"type": "text", "text": self._first_message(window)}]}]

    def _first_message(self, window) -> str:
        _, start, end = window
        lineage = [agent_prompts.lineage_note(a) for a in
                   self.ctx.lineage_of(self.individual, self.cfg.lineage_entries)]
        return agent_prompts.first_message(
            self.cfg, function=self.fn, start=start, end=end,
            profile=window_profile(self.ctx, self.individual, window),
            edits_so_far=len(self.individual.edits), speedup=self.best,
            lineage=lineage, notes=self.op.notes(self.ctx),
            inspirations=self.setup.extra.inspirations)

    def current(self):
        """The candidate the conversation works on: the individual with the stack on top
        (its evaluation: the last accepted try's)."""
        if not self.stack:
            return self.individual
        return replace(self.individual, edits=self.individual.edits + self.stacked(),
                       eval_key=self.stack[-1][1].eval_key or "", fitness=self.best,
                       status="equal")

    def stacked(self) -> tuple[Edit, ...]:
        return tuple(e for e, _, _ in self.stack)

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> Edit | tuple | Rejected:
        while not self.ended:
            self.ended = self._limit()
            if self.ended:
                break
            answer = self._ask()
            if answer is None:
                break
            self.messages.append({"role": "assistant",
                                  "content": answer.blocks() or [{"type": "text", "text": "-"}]})
            self.turn += 1
            if not answer.tool_uses:
                self.ended = "an answer without a tool call"
                break
            results = self._run_tools(answer)
            if self.done:
                self.ended = "submitted"
                break
            note = agent_prompts.turn_note(turn=self.turn, config=self.cfg,
                                           tries_left=self.cfg.max_tries - len(self.tries),
                                           spent=self.spent, stacked=len(self.stack),
                                           best=self.best)
            self.messages.append({"role": "user",
                                  "content": results + [{"type": "text", "text": note}]})
        log.info("%s: conversation on %s ended (%s) after %d turns, %d tries, %d stacked, $%.4f",
                 self.op.name, self.ind_id, self.ended, self.turn, len(self.tries),
                 len(self.stack), self.spent)
        return self._result()

    def _limit(self) -> str:
        c = self.cfg
        if self.turn >= c.max_turns:
            return f"turn limit ({c.max_turns})"
        if self.tokens >= c.max_conversation_tokens:
            return f"token limit ({self.tokens} of {c.max_conversation_tokens})"
        if self.turn and self.spent + self.last_cost > c.max_conversation_dollars:
            return (f"dollar limit (${self.spent:.4f} spent, a turn costs ~${self.last_cost:.4f},"
                    f" limit ${c.max_conversation_dollars:.2f})")
        return ""

    def _ask(self) -> Answer | None:
        """This turn's answer: read back from the archive, or sent (and paid) now."""
        ctx, cfg, t = self.ctx, self.cfg, self.turn
        cid = call_id(ctx.where.get("run_id", ""), [self.ind_id], self.op.name,
                      dict(ctx.where, turn=t))
        self.call = cid
        request = agent_prompts.request(cfg, self.op.kernel_text(ctx), self.messages,
                                        self.setup.extra.variant)
        stored = self.op.recorded(ctx, cid)
        if stored is not None:
            try:
                answer = Answer.from_json(stored["answer"])
            except (KeyError, TypeError, ValueError) as exc:
                self.ended = f"the archived answer of turn {t} is unreadable ({exc})"
                return None
            usage = Usage(int(stored["tokens_in"]), int(stored["tokens_out"]),
                          int(stored["cache_write_tokens"]), int(stored["cache_read_tokens"]))
            self._count(usage, float(stored["cost"]))
            return answer
        if ctx.budget_left() <= 0:
            self.ended = BUDGET_SPENT
            return None
        reply = self.op.client_of(self.setup.index).send(request, seed=cid,
                                                         deadline=ctx.deadline)
        if not reply.ok:
            self.ended = reply.reason
            self.unusable = reply.unusable
            return None
        answer = _normalized(reply.answer, t)
        paid = cost(reply.usage, cfg.price)
        ctx.charge(hook_call(CallRecord(
            cid, self.op.name, cfg.model, request_text(wire_body(cfg, request)), reply.usage,
            paid, "turn" if answer.tool_uses else "no_tool",
            "; ".join(r for r in (", ".join(u.name for u in answer.tool_uses)[:300], reply.note)
                      if r), answer.to_json())), turn=t)
        self._count(reply.usage, paid)
        return answer

    def _count(self, usage: Usage, paid: float) -> None:
        self.spent += paid
        self.last_cost = paid
        self.tokens += (usage.input_tokens + usage.output_tokens
                        + usage.cache_creation_input_tokens + usage.cache_read_input_tokens)

    # -- tools ------------------------------------------------------------------------

    def _run_tools(self, answer: Answer) -> list[dict]:
        out = []
        for k, use in enumerate(answer.tool_uses):
            error = True
            if self.done:
                text = "ignored: the conversation ended with submit"
            elif k >= self.cfg.max_tool_calls:
                text = f"ignored: at most {self.cfg.max_tool_calls} tool calls a turn"
            else:
                try:
                    text, error = self._tool(use), False
                except ToolRefused as exc:
                    text = f"refused: {for_model(str(exc))}"
            block = {"type": "tool_result", "tool_use_id": use.id, "content": text}
            out.append(block | ({"is_error": True} if error else {}))
        return out

    def _tool(self, use: ToolUse) -> str:
        inp = use.input
        if not isinstance(inp, dict):
            raise ToolRefused(f"the input of {use.name} must be an object")
        handler = {"show": self._show, "analyze": self._analyze, "try_edit": self._try,
                   "submit": self._submit, "next_window": self._next_window,
                   "profile": self._profile}.get(use.name)
        if handler is None:
            raise ToolRefused(f"unknown tool {use.name[:40]!r}; the tools are "
                           + ", ".join(agent_prompts.TOOL_NAMES))
        return handler(inp)

    def _show(self, inp: dict) -> str:
        _fields(inp, {"function", "start", "end"})
        fn = inp.get("function")
        if fn not in [f.name for f in self.program.functions]:
            raise ToolRefused(f"no function {str(fn)[:80]!r}; the kernel is `{self.fn_name}`")
        return agent_tools.show(self.program, fn, _int(inp, "start"), _int(inp, "end"),
                                self.ctx.profile_of(self.current()),
                                max_lines=self.cfg.max_show_lines)

    def _analyze(self, inp: dict) -> str:
        _fields(inp, {"start", "end"})
        summary = self.op.kernel_summary(self.ctx)
        return agent_tools.analyze(self.program, self.fn_name, _int(inp, "start"),
                                   _int(inp, "end"), self.program.source.target,
                                   vgprs=summary["granulated_vgprs"],
                                   sgprs=summary["sgprs_used_by_code"])

    def _profile(self, inp: dict) -> str:
        _fields(inp, set())
        return agent_tools.profile_text(self._windows(), speedup=self.best,
                                        stacked=len(self.stack),
                                        label=self._label(), function=self.fn_name)

    def _next_window(self, inp: dict) -> str:
        _fields(inp, set())
        for fn, start, end, share in self._windows():
            if fn == self.fn_name and end > start and not any(
                    s < end and start < e for s, e in self.shown):
                start, end = start, min(end, start + self.cfg.max_window_lines)
                self.shown.append((start, end))
                return agent_tools.window_text(
                    self.fn, start, end, self.cfg, share=share, rank=len(self.shown),
                    profile=window_profile(self.ctx, self.current(), (fn, start, end)))
        raise ToolRefused("no hot window left that this conversation has not been shown; "
                       "show any range, or submit")

    def _windows(self) -> list[tuple[str, int, int, float | None]]:
        """The current best's windows, hottest first, with their share of the time where
        its profile has it."""
        prof = self.ctx.profile_of(self.current())
        if prof is not None and prof.windows:
            return [w for w in prof.windows if w[0] == self.fn_name]
        return [(f, s, e, None) for f, s, e in self.ctx.windows(self.current())]

    def _label(self) -> str:
        prof = self.ctx.profile_of(self.current())
        return prof.label if prof is not None else "modeled"

    def _try(self, inp: dict) -> str:
        _fields(inp, {"start", "end", "replacement"})
        if len(self.tries) >= self.cfg.max_tries:
            raise ToolRefused(f"no tries left ({self.cfg.max_tries} used); submit your best")
        edit, asked = self._edit(inp, "")
        chain = self.stacked() + (edit,)
        key = novelty_key(self.individual.edits + chain)
        if key in self.tried:
            raise ToolRefused(f"the same edit as try {self.tried[key]} (after normalizing case "
                           "and spacing): not sent to verification again; no try used")
        where = self.ctx.seen(self.individual.edits + chain)
        if where is not None:
            raise ToolRefused(f"this run tried the same candidate already ({where}): not sent "
                           "to verification; no try used")
        result = self.ctx.try_edit(chain)
        self.tries.append((chain, result))
        if not result.refused:
            self.tried[key] = len(self.tries)
        accepted = result.equal and (result.speedup or 0.0) > self.best
        shift = self._push(edit, result, asked) if accepted else None
        return agent_tools.try_text(len(self.tries), self.cfg.max_tries, edit, asked, result,
                                    stacked=len(self.stack) if accepted else None, shift=shift)

    def _push(self, edit: Edit, result: TryResult, asked: tuple) -> int:
        """Accept ``edit``: the base of everything after. Returns how far the instructions
        after it moved."""
        self.stack.append((edit, result, (edit.start, edit.end,
                                          tuple(normalized_line(t) for t in asked))))
        self.best = result.speedup or self.best
        self.program = self.ctx.program(self.current())
        self.fn = self.program.function(self.fn_name)
        delta = instruction_count(edit.lines) - (edit.end - edit.start)
        self.shown = [_shifted(w, edit.start, edit.end, delta) for w in self.shown]
        return delta

    def _submit(self, inp: dict) -> str:
        _fields(inp, {"start", "end", "replacement", "rationale"})
        rationale = inp.get("rationale")
        if not isinstance(rationale, str):
            raise ToolRefused("rationale must be a string")
        given = {"start", "end", "replacement"} & set(inp)
        if given and len(given) < 3:
            raise ToolRefused("give start, end and replacement together, or none of them")
        self.done = True
        stack = f"the stack of {len(self.stack)} accepted edit(s)"
        if not given or self._is_stacked(inp):
            return f"submitted: {stack}"
        try:
            edit, _ = self._edit(inp, " ".join(rationale.split())[:200])
        except NoChange:
            return f"submitted: no change on top of {stack}"
        if novelty_key(self.individual.edits + self.stacked() + (edit,)) in self.tried:
            return f"submitted: {stack} (the submitted edit was tried and not accepted)"
        self.submitted = edit
        return f"submitted: {stack} and an untried edit on top (verified later)"

    def _is_stacked(self, inp: dict) -> bool:
        """A submission of an edit as it was tried and accepted (it is in the stack)."""
        try:
            asked = (_int(inp, "start"), _int(inp, "end"),
                     tuple(normalized_line(t) for t in inp.get("replacement") or ()))
        except (ToolRefused, AttributeError, TypeError):
            return False
        return any(a == asked for _, _, a in self.stack)

    def _edit(self, inp: dict, rationale: str) -> tuple[Edit, tuple[str, ...]]:
        """The model's edit of the current program, checked in the safe order (shape before
        any tool), waits recomputed; also the lines as the model wrote them (after the shape
        check)."""
        cfg, fn = self.cfg, self.fn
        start, end = _int(inp, "start"), _int(inp, "end")
        n = len(fn.instructions)
        if not 0 <= start <= end <= n or start == end == n:
            raise ToolRefused(f"window [{start}, {end}) is outside instructions 0..{n - 1}")
        if end - start > cfg.max_window_lines:
            raise ToolRefused(f"window of {end - start} lines; at most {cfg.max_window_lines}")
        crossed = _crossed_label(fn, start, end)
        if crossed:
            raise ToolRefused(f"window [{start}, {end}) crosses label {crossed}: edit one block")
        lines = inp.get("replacement")
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise ToolRefused("replacement must be a list of strings")
        if len(lines) > cfg.max_replacement_lines or \
                sum(map(len, lines)) > cfg.max_replacement_chars:
            raise ToolRefused(f"replacement too large (at most {cfg.max_replacement_lines} lines, "
                           f"{cfg.max_replacement_chars} characters)")
        original = [i.text for i in fn.instructions[start:end]]
        try:
            checked = checked_lines(lines, target=self.program.source.target,
                                    labels=set(fn.labels), original=original)
        except AnswerRejected as exc:
            raise ToolRefused(exc.reason) from None
        if checked == [" ".join(t.split()) for t in original]:
            raise NoChange("no change: the replacement is the window's own lines")
        note = (f"{rationale} " if rationale else "") + \
            f"[llm call {self.call[:12]}, turn {self.turn - 1}]"
        edit = after_sanitize(Edit(self.fn_name, start, end, tuple(checked),
                                   operator=self.op.name, note=self.setup.note(note)),
                              self.program)
        return edit, tuple(checked)

    # -- the result -------------------------------------------------------------------

    def _result(self) -> Edit | tuple | Rejected:
        edits = self.stacked() + ((self.submitted,) if self.submitted is not None else ())
        if edits:
            return edits[0] if len(edits) == 1 else edits
        if self.unusable:
            raise OperatorUnusable(f"{self.op.name}: {self.ended}")
        return self.op._reject(self.ctx, f"conversation ended ({self.ended}) after "
                               f"{self.turn} turns and {len(self.tries)} tries; no tried edit "
                               "passed faster than the candidate, and nothing untried was "
                               "submitted")


def _shifted(window: tuple[int, int], start: int, end: int, delta: int) -> tuple[int, int]:
    """A window of the program before an edit of ``[start, end)`` (which moved what follows
    by ``delta``), in the program after it."""
    s, e = window
    if e <= start:
        return s, e
    if s >= end:
        return s + delta, e + delta
    return min(s, start), max(e + delta, end + delta, start)


def _normalized(answer: Answer, turn: int) -> Answer:
    """The answer as the transcript keeps it: tool-call ids unique within the answer (a
    server that sends none, or repeats one, gets ``call_<turn>_<k>``), and inputs with
    their keys sorted, as the archive stores them: a resumed conversation, whose answers
    come back from the archive, then sends the same bytes (a cache hit, too)."""
    seen: set[str] = set()
    uses = []
    for k, u in enumerate(answer.tool_uses):
        uid = u.id if u.id and u.id not in seen and len(u.id) <= 64 and \
            u.id.replace("_", "").replace("-", "").isalnum() else f"call_{turn}_{k}"
        seen.add(uid)
        inp = json.loads(json.dumps(u.input, sort_keys=True)) if isinstance(u.input, dict) \
            else u.input
        uses.append(ToolUse(uid, u.name, inp))
    return Answer(answer.text, tuple(uses), answer.stop)


def _fields(inp: dict, allowed: set[str]) -> None:
    extra = sorted(set(inp) - allowed)
    if extra:
        raise ToolRefused(f"unexpected field {extra[0][:40]!r} (fields: "
                       f"{', '.join(sorted(allowed)) or 'none'})")


def _int(inp: dict, key: str) -> int:
    v = inp.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 31:
        raise ToolRefused(f"{key} must be a non-negative integer")
    return v


def _crossed_label(fn, start: int, end: int) -> str | None:
    from asmevo.targets.amdgpu.program import Label
    idx = 0
    for item in fn.items:
        if isinstance(item, Label):
            if start < idx < end:
                return item.name
        else:
            idx += 1
    return None
