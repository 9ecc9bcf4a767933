"""``llm_agent``: one bounded, tool-using conversation per proposal.

The model gets four tools: ``show`` and ``analyze`` read the candidate (its
listing with the per-line profile; liveness, outstanding counters, hazard wait
states), ``try_edit`` has the *engine* verify and time an edit (the
context's ``try_edit`` callback: an archived evaluation, counted in the run's
budget; the operator never runs anything), ``submit`` ends the conversation.
What the operator returns is the submitted edit if it was tried and passed,
else the best passing try, else an untried submission (judged later like any
proposal), else nothing.

Bounds, all from the config: turns, tries, tokens and dollars per conversation
(checked before each turn: a turn is not sent once the conversation's tokens
reach the limit, or when its spend plus the last turn's cost would pass the
dollar limit), tool calls per turn, and the run's ``budget.llm_dollars``.

Resume: every turn's call has its own deterministic id (the proposal's call id
plus the turn). A turn whose answer the archive holds is not sent again: the
answer is read back and its tools run again (``show``/``analyze`` are pure,
``try_edit`` comes back from the verdict cache), so the next request is the
same bytes as in the uninterrupted run, and only the first unanswered turn
is sent.
"""
from __future__ import annotations

import json
import logging

from asmevo.edits import Edit
from operators.llm import agent_prompts, agent_tools
from operators.llm.answer import Answer, ToolUse
from operators.llm.client import wire_body
from operators.llm.operators import BUDGET_SPENT, LLMOperator, after_sanitize, window_profile
from operators.llm.parse import AnswerRejected, checked_lines
from operators.llm.pricing import Usage, cost
from operators.llm.spend import CallRecord, call_id, hook_call, request_text
from asmevo.operator import OperatorContext, Rejected, TryResult, mutation

log = logging.getLogger("asmevo.llm")


class _Refused(Exception):
    """A tool call that cannot be carried out; the message goes back to the model."""


class _NoChange(_Refused):
    """An edit whose lines are the window's own."""


@mutation("llm_agent")
class LLMAgent(LLMOperator):
    """A conversation with tools per proposal (see the module docstring)."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, window = self.hot_window(individual, context)
        if isinstance(window, Rejected):
            return window
        return Conversation(self, context, individual, program, window).run()


class Conversation:
    """The state of one conversation: transcript, tries, spend."""

    def __init__(self, op: LLMAgent, context: OperatorContext, individual, program, window):
        self.op, self.ctx, self.individual, self.program = op, context, individual, program
        self.cfg = op.config
        self.fn_name = window[0]
        self.fn = program.function(self.fn_name)
        context.where.setdefault("operator", op.name)
        self.ind_id = individual.id
        self.tries: list[tuple[Edit, TryResult]] = []
        self.submitted: Edit | None = None
        self.done = False                  # submit was called
        self.call = ""                     # the current turn's call id
        self.turn = 0
        self.spent = 0.0
        self.tokens = 0
        self.last_cost = 0.0
        self.ended = ""
        self.messages = [{"role": "user", "content": [
            {"type": "text", "text": self._first_message(window)}]}]

    def _first_message(self, window) -> str:
        _, start, end = window
        lineage = [agent_prompts.lineage_note(a) for a in
                   self.ctx.lineage_of(self.individual, self.cfg.lineage_entries)]
        fitness = self.individual.fitness or 1.0
        return agent_prompts.first_message(
            self.cfg, function=self.fn, start=start, end=end,
            profile=window_profile(self.ctx, self.individual, window),
            edits_so_far=len(self.individual.edits), speedup=fitness,
            lineage=lineage, notes=self.op.notes(self.ctx))

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> Edit | Rejected:
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
                                           spent=self.spent)
            self.messages.append({"role": "user",
                                  "content": results + [{"type": "text", "text": note}]})
        log.info("%s: conversation on %s ended (%s) after %d turns, %d tries, $%.4f",
                 self.op.name, self.ind_id, self.ended, self.turn, len(self.tries), self.spent)
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
        request = agent_prompts.request(cfg, self.op.kernel_text(ctx), self.messages)
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
        reply = self.op.client.send(request, seed=cid, deadline=ctx.deadline)
        if not reply.ok:
            self.ended = reply.reason
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
                except _Refused as exc:
                    text = f"refused: {exc}"
            block = {"type": "tool_result", "tool_use_id": use.id, "content": text}
            out.append(block | ({"is_error": True} if error else {}))
        return out

    def _tool(self, use: ToolUse) -> str:
        inp = use.input
        if not isinstance(inp, dict):
            raise _Refused(f"the input of {use.name} must be an object")
        if use.name == "show":
            _fields(inp, {"function", "start", "end"})
            fn = inp.get("function")
            if fn not in [f.name for f in self.program.functions]:
                raise _Refused(f"no function {str(fn)[:80]!r}; the kernel is `{self.fn_name}`")
            return agent_tools.show(self.program, fn, _int(inp, "start"), _int(inp, "end"),
                                    self.ctx.profile_of(self.individual),
                                    max_lines=self.cfg.max_show_lines)
        if use.name == "analyze":
            _fields(inp, {"start", "end"})
            summary = self.op.kernel_summary(self.ctx)
            return agent_tools.analyze(self.program, self.fn_name, _int(inp, "start"),
                                       _int(inp, "end"), self.program.source.target,
                                       vgprs=summary["granulated_vgprs"],
                                       sgprs=summary["sgprs_used_by_code"])
        if use.name == "try_edit":
            _fields(inp, {"start", "end", "replacement"})
            if len(self.tries) >= self.cfg.max_tries:
                raise _Refused(f"no tries left ({self.cfg.max_tries} used); submit your best")
            edit, asked = self._edit(inp, "")
            result = self.ctx.try_edit(edit)
            self.tries.append((edit, result))
            return agent_tools.try_text(len(self.tries), self.cfg.max_tries, edit, asked, result)
        if use.name == "submit":
            _fields(inp, {"start", "end", "replacement", "rationale"})
            rationale = inp.get("rationale")
            if not isinstance(rationale, str):
                raise _Refused("rationale must be a string")
            self.done = True
            try:
                self.submitted, _ = self._edit(inp, " ".join(rationale.split())[:200])
            except _NoChange:
                return "submitted: no change (the best passing try, if any, is kept)"
            return "submitted"
        raise _Refused(f"unknown tool {use.name[:40]!r}; the tools are "
                       + ", ".join(agent_prompts.TOOL_NAMES))

    def _edit(self, inp: dict, rationale: str) -> tuple[Edit, tuple[str, ...]]:
        """The model's edit, checked in the safe order (shape before any tool), waits
        recomputed; also the lines as the model wrote them (after the shape check)."""
        cfg, fn = self.cfg, self.fn
        start, end = _int(inp, "start"), _int(inp, "end")
        n = len(fn.instructions)
        if not 0 <= start <= end <= n or start == end == n:
            raise _Refused(f"window [{start}, {end}) is outside instructions 0..{n - 1}")
        if end - start > cfg.max_window_lines:
            raise _Refused(f"window of {end - start} lines; at most {cfg.max_window_lines}")
        crossed = _crossed_label(fn, start, end)
        if crossed:
            raise _Refused(f"window [{start}, {end}) crosses label {crossed}: edit one block")
        lines = inp.get("replacement")
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise _Refused("replacement must be a list of strings")
        if len(lines) > cfg.max_replacement_lines or \
                sum(map(len, lines)) > cfg.max_replacement_chars:
            raise _Refused(f"replacement too large (at most {cfg.max_replacement_lines} lines, "
                           f"{cfg.max_replacement_chars} characters)")
        original = [i.text for i in fn.instructions[start:end]]
        try:
            checked = checked_lines(lines, target=self.program.source.target,
                                    labels=set(fn.labels), original=original)
        except AnswerRejected as exc:
            raise _Refused(exc.reason) from None
        if checked == [" ".join(t.split()) for t in original]:
            raise _NoChange("no change: the replacement is the window's own lines")
        note = (f"{rationale} " if rationale else "") + \
            f"[llm call {self.call[:12]}, turn {self.turn - 1}]"
        edit = after_sanitize(Edit(self.fn_name, start, end, tuple(checked),
                                   operator=self.op.name, note=note), self.program)
        return edit, tuple(checked)

    # -- the result -------------------------------------------------------------------

    def _result(self) -> Edit | Rejected:
        passing = [(e, r) for e, r in self.tries if r.equal]
        sub = self.submitted
        if sub is not None:
            tried = next(((e, r) for e, r in self.tries if e.key == sub.key), None)
            if tried is not None and tried[1].equal:
                return tried[0]
        if passing:
            return max(passing, key=lambda er: er[1].speedup or 0.0)[0]
        if sub is not None and not any(e.key == sub.key and not r.refused
                                       for e, r in self.tries):
            return sub          # never evaluated: the engine judges it like any proposal
        return self.op._reject(self.ctx, f"conversation ended ({self.ended}) after "
                               f"{self.turn} turns and {len(self.tries)} tries; no tried edit "
                               "passed")


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
        raise _Refused(f"unexpected field {extra[0][:40]!r} (fields: {', '.join(sorted(allowed))})")


def _int(inp: dict, key: str) -> int:
    v = inp.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 31:
        raise _Refused(f"{key} must be a non-negative integer")
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
