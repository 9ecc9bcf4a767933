"""The single-call LLM operators ``llm_mutate`` and ``llm_repair`` (``llm_crossover`` is in
:mod:`asmevo.operators.llm.crossover`), and the machinery every LLM operator shares.

Each one picks its model (:mod:`asmevo.operators.llm.ensemble`) and prompt variant
(:mod:`asmevo.operators.llm.variants`), builds a request (:mod:`asmevo.operators.llm.prompts`, with
the run's inspirations), sends it once
(:mod:`asmevo.operators.llm.client`, with retries), records what it cost through the
context's spend hook (:mod:`asmevo.operators.llm.spend`), and turns the tool call into
an :class:`Edit` only after sanitizing (:mod:`asmevo.operators.llm.parse`). Every way
of not producing an edit (budget spent, API failure, no tool call, a refused
line, an edit the run tried already) returns a Rejected with the reason given to
``context.reject``: the engine records it with the proposal, and the run goes on.
A call that failed because the setup cannot work (the key refused, the server not
reached, the model unknown: ``Reply.unusable``) raises OperatorUnusable instead; and
before the search, :meth:`LLMOperator.preflight` asks each model whether it can
(:mod:`asmevo.operators.llm.preflight`).
"""
from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable

from asmevo.edits import Edit
from asmevo.operators.llm.answer import Answer, ToolUse
from asmevo.operators.llm.client import wire_body
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.parse import TOOL_NAME, AnswerRejected, Proposal, sanitized_lines
from asmevo.operators.llm.pricing import cost
from asmevo.operators.llm import ensemble, preflight, prompts, variants
from asmevo.operators.llm.spend import CallRecord, call_id, hook_call, request_text
from asmevo.operator import Candidate, OperatorContext, OperatorUnusable, Rejected, mutation

log = logging.getLogger("asmevo.llm")

BUDGET_SPENT = "LLM budget spent"


def _stored_answer(tool_input: dict, tool: str = TOOL_NAME) -> Answer:
    """A recorded tool input standing in for the answer (resume without re-sending)."""
    return Answer(tool_uses=(ToolUse("stored", tool, tool_input),))


def lines_of(setup: "Setup", *, target, labels: set[str], original: list[str]):
    """The sanitizer of a ``propose_edit`` answer: its lines, checked in the safe order."""
    cfg = setup.config
    return lambda answer: sanitized_lines(answer, target=target, labels=labels,
                                          original=original, max_lines=cfg.max_replacement_lines,
                                          max_chars=cfg.max_replacement_chars)


def _config(llm, overrides: dict) -> LLMConfig:
    try:
        if isinstance(llm, LLMConfig):
            base = llm
            return replace(base, **overrides) if overrides else base
        table = dict(llm or {})
        table.update(overrides)
        return LLMConfig.from_table(table)
    except (LLMError, TypeError) as exc:
        # get_operator turns a ValueError into an OperatorError naming the operator
        raise ValueError(exc.message if isinstance(exc, LLMError) else str(exc)) from None


@dataclass(frozen=True)
class Setup:
    """What one proposal runs with: the ensemble's model ``index`` and its configuration,
    and what its requests carry besides the task (inspirations, the prompt variant)."""

    index: int
    config: LLMConfig
    extra: prompts.Extra

    def note(self, text: str) -> str:
        """``text`` with the prompt variant's tag, when variants are on."""
        v = self.extra.variant
        return text if v is None else f"{text} {variants.tag(v)}"


class LLMOperator:
    """Shared machinery; subclasses build the request and choose the window."""

    name = "llm"

    def __init__(self, llm: LLMConfig | dict | None = None, client=None,
                 client_for: Callable[[LLMConfig], Any] | None = None, **overrides: Any):
        """``llm``: the run's ``[llm]`` table (or an LLMConfig); ``overrides``: per-operator.
        ``client``: the client of a single model; ``client_for``: a client for each model's
        configuration (tests); else an :class:`~asmevo.operators.llm.client.LLMClient` each."""
        self.config = _config(llm, overrides)
        self._clients: dict[int, Any] = {0: client} if client is not None else {}
        self._client_for = client_for
        self._kernel_texts: dict[tuple, object] = {}
        self._lock = threading.Lock()

    # -- plumbing shared by the operators ------------------------------------------------
    @property
    def client(self):
        """The first model's client."""
        return self.client_of(0)

    def client_of(self, k: int):
        """The client of the ensemble's model ``k``, made when first needed (the key is read
        then: config validation and reports need none)."""
        with self._lock:
            if k not in self._clients:
                cfg = self.config.members[k].config
                if self._client_for is not None:
                    self._clients[k] = self._client_for(cfg)
                else:
                    from asmevo.operators.llm.client import LLMClient
                    self._clients[k] = LLMClient(cfg)
            return self._clients[k]

    def preflight(self, context: OperatorContext, done: dict) -> list[str]:
        """Whether each of this operator's models can work, before the search
        (:class:`asmevo.operator.Preflight`)."""
        return preflight.preflight(self, context, done)

    def setup(self, context: OperatorContext, individual) -> Setup:
        """This proposal's model (by the ensemble's rule), prompt variant and inspirations."""
        cfg = self.config
        members = cfg.members
        records = context.model_records(self.name) if cfg.ensemble == "bandit" and \
            len(members) > 1 else {}
        k = ensemble.choose(members, cfg.ensemble, context.rng, records)
        variant = variants.inherit(individual.edits, cfg.prompt_mutation, context.rng)
        found = context.inspirations(cfg.inspirations, cfg.diverse_inspirations) \
            if cfg.inspirations or cfg.diverse_inspirations else ()
        text = prompts.inspirations_section(found, max_lines=cfg.inspiration_lines)
        return Setup(k, members[k].config, prompts.Extra(text, variant))

    def kernel_summary(self, context: OperatorContext) -> dict:
        """K0's ABI summary of the kernel (arguments, registers used and allocated, LDS)."""
        key = (id(context.k0), context.kernel, "summary")
        if key not in self._kernel_texts:
            from asmevo.targets.amdgpu.summary import kernel_summaries
            self._kernel_texts[key] = kernel_summaries(context.k0.source, context.k0,
                                                       only=context.kernel)[0]
        return self._kernel_texts[key]

    def kernel_text(self, context: OperatorContext) -> str:
        """The cached kernel block: computed once per (K0, kernel), byte-identical every call."""
        k0 = context.k0
        key = (id(k0), context.kernel)
        if key not in self._kernel_texts:
            self._kernel_texts[key] = prompts.kernel_block(
                self.kernel_summary(context), k0.function(context.kernel),
                max_listing_lines=self.config.max_listing_lines)
        return self._kernel_texts[key]

    def notes(self, context: OperatorContext) -> list[prompts.Note]:
        out = []
        for a in list(context.notebook)[: self.config.notebook_entries]:
            out.append(prompts.Note(a.operator, a.summary, a.status, a.reason, a.speedup))
        return out

    def hot_window(self, individual, context: OperatorContext):
        """(the individual's program, the window to work on); the window is a Rejected
        when there is none."""
        program = context.program(individual)
        window = pick_window(self, context, program, individual)
        if window is None:
            return program, self._reject(context, "no window to edit")
        return program, window

    def _reject(self, context: OperatorContext, reason: str) -> Rejected:
        log.info("%s: %s", self.name, reason)
        return context.reject(f"{self.name}: {reason}")

    def recorded(self, context: OperatorContext, cid: str) -> dict | None:
        """The usage row of a call this run already paid for (its answer decoded), or None."""
        row = context.spend.recorded(cid)
        if row is None:
            return None
        row = dict(row)
        answer = row.get("answer")
        row["answer"] = json.loads(answer) if isinstance(answer, str) else answer
        return row

    def ask(self, context: OperatorContext, request: dict, setup: Setup, *,
            individuals: list[str], sanitize: Callable[[Answer], Any],
            tool: str = TOOL_NAME) -> tuple[Any, str]:
        """Send (or reuse) one request to the setup's model, record its cost, and turn the
        answer into what ``sanitize`` makes of it (it raises AnswerRejected to refuse);
        ``tool``: the tool the request asks for (a reused answer is its stored input)."""
        cfg = setup.config
        context.where.setdefault("operator", self.name)
        cid = call_id(context.where.get("run_id", ""), individuals, self.name, context.where)
        text = request_text(wire_body(cfg, request))
        stored = self.recorded(context, cid)
        if stored is not None:
            log.info("%s: call %s already recorded; reusing its answer", self.name, cid[:12])
            status, reason = stored.get("status") or "", stored.get("reason") or ""
            if status in ("no_tool", "rejected") and reason:
                # refused when it was paid for: the same refusal (a text-only answer has no
                # stored tool input to parse again)
                what = "no usable tool call" if status == "no_tool" else "answer rejected"
                return self._reject(context, f"{what}: {reason}"), cid
            answer = stored["answer"]
            reply_answer = _stored_answer(answer if isinstance(answer, dict) else {}, tool)
        else:
            if context.budget_left() <= 0:
                return self._reject(context, BUDGET_SPENT), cid
            reply = self.client_of(setup.index).send(request, seed=cid,
                                                     deadline=context.deadline)
            if not reply.ok:
                if reply.unusable:
                    raise OperatorUnusable(f"{self.name}: {reply.reason}")
                return self._reject(context, reply.reason), cid
            reply_answer = reply.answer
        status, reason, answer, result = "proposed", "", None, None
        try:
            uses = reply_answer.tool_uses
            answer = uses[0].input if uses and isinstance(uses[0].input, dict) else None
            result = sanitize(reply_answer)
        except AnswerRejected as exc:
            status, reason = exc.kind, exc.reason
        if stored is None:
            usage = reply.usage
            context.charge(hook_call(CallRecord(
                cid, self.name, cfg.model, text, usage, cost(usage, cfg.price),
                status, "; ".join(r for r in (reason, reply.note) if r), answer)))
        if result is None:
            what = "no usable tool call" if status == "no_tool" else "answer rejected"
            return self._reject(context, f"{what}: {reason}"), cid
        return result, cid

    def edit(self, context: OperatorContext, individual, setup: Setup, program,
             window: tuple[str, int, int], p: Proposal, cid: str) -> Edit | Rejected:
        """The proposal's edit of ``window``, waits recomputed; refused when it changes
        nothing or is a candidate the run tried already (:meth:`duplicate`)."""
        function, start, end = window
        e = after_sanitize(Edit(function, start, end, p.lines, operator=self.name,
                                note=setup.note(f"{p.rationale} [llm call {cid[:12]}]")),
                           program)
        original = [i.text for i in program.function(function).instructions[start:end]]
        if list(e.lines) == [" ".join(t.split()) for t in original]:
            return self._reject(context, f"model proposed no change ({p.rationale})")
        return self.duplicate(context, individual.edits + (e,)) or e

    def duplicate(self, context: OperatorContext, chain: tuple[Edit, ...]) -> Rejected | None:
        """Why a candidate with this edit chain from K0 is not worth building again (the run
        tried one with the same normalized text), or None."""
        where = context.seen(chain)
        if where is None:
            return None
        return self._reject(context, f"duplicate: the run tried this candidate already "
                            f"({where}); not sent to verification")



def after_sanitize(edit: Edit, program) -> Edit:
    """THE single place where LLM edits meet waitcnt recomputation.

    Each ``s_waitcnt`` the model wrote is kept in place but weakened to what its
    uses need, and a use no wait covers gets one
    (:func:`~asmevo.targets.amdgpu.analysis.waitcnt.relax_waitcnts`), from the
    counters outstanding where the window starts and no more left behind than
    the original window left. The static gate (hazards, waitcnts, ABI) then runs
    in the evaluator for every operator's candidate. A window the analysis
    cannot place (not inside one block) passes unchanged: the gate still judges it.
    """
    try:
        from asmevo.targets.amdgpu.analysis.waitcnt import relax_waitcnts, window_states
    except ImportError:      # analysis layer absent: the evaluator's gate still runs
        return edit
    from asmevo.errors import AsmevoError
    try:
        entry, exit_ = window_states(program.function(edit.function), edit.start, edit.end)
        lines = tuple(relax_waitcnts(list(edit.lines), entry, exit_))
    except AsmevoError as exc:
        log.info("waitcnt recomputation skipped for %s: %s", edit, exc)
        return edit
    if lines == edit.lines:
        return edit
    return replace(edit, lines=lines, note=edit.note + " (waits recomputed)")


def _ind_id(x: Candidate) -> str:
    return x.id


def window_profile(context: OperatorContext, individual, window) -> prompts.WindowProfile | None:
    """Per-line executions, cycles and stalls of ``window`` from the individual's profile
    (the engine's ``profile_of``: its archived evaluation); None where it has none."""
    prof = context.profile_of(individual)
    if prof is None:
        return None
    fn, start, end = window
    costs = [prof.at(fn, i) for i in range(start, end)]
    if not any(costs):
        return None
    return prompts.WindowProfile(
        tuple(c.executions if c else None for c in costs),
        tuple(c.stalls if c else None for c in costs), prof.label,
        tuple(c.cycles if c else None for c in costs))


def choose_window(windows: list, profile, rng):
    """One of ``windows`` (hottest first), drawn by its share of the modeled time, which
    the individual's profiled hot windows carry (``profile.windows``): a window with 40%
    of the time is asked about four times as often as one with 10%, and one with 2%
    rarely. Without shares (an individual not profiled: every basic block, larger first)
    one of the first three, uniformly."""
    known = {tuple(w[:3]): w[3] for w in (profile.windows if profile is not None else ())}
    weighted = [(w, known[tuple(w)]) for w in windows
                if isinstance(known.get(tuple(w)), (int, float))
                and math.isfinite(known[tuple(w)]) and known[tuple(w)] > 0]
    if weighted:
        return rng.choices([w for w, _ in weighted], weights=[x for _, x in weighted])[0]
    top = windows[: min(3, len(windows))]
    return top[0] if len(top) == 1 else rng.choice(top)


def pick_window(self: LLMOperator, context: OperatorContext, program, individual):
    """The window a proposal works on (:func:`choose_window`), cut to ``max_window_lines``
    at a random place where it is longer."""
    windows = [tuple(w[:3]) for w in context.windows(individual) if w[2] > w[1]]
    if not windows:
        return None
    fn, start, end = choose_window(windows, context.profile_of(individual), context.rng)
    limit = self.config.max_window_lines
    if end - start > limit:
        start = start + context.rng.randrange(end - start - limit + 1)
        end = start + limit
    return fn, start, end


@mutation("llm_mutate", targets=("amdgpu",))
class LLMMutate(LLMOperator):
    """Ask the model for a faster, equivalent version of one hot window."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, window = self.hot_window(individual, context)
        if isinstance(window, Rejected):
            return window
        fn_name, start, end = window
        fn = program.function(fn_name)
        original = [i.text for i in fn.instructions[start:end]]
        setup = self.setup(context, individual)
        request = prompts.mutation_request(
            setup.config, kernel_text=self.kernel_text(context), function=fn, start=start,
            end=end, profile=window_profile(context, individual, window),
            notes=self.notes(context), edits_so_far=len(individual.edits), extra=setup.extra)
        p, cid = self.ask(context, request, setup, individuals=[_ind_id(individual)],
                          sanitize=lines_of(setup, target=program.source.target,
                                            labels=set(fn.labels), original=original))
        return p if isinstance(p, Rejected) else self.edit(context, individual, setup, program,
                                                           window, p, cid)


def _label_positions(fn) -> list[tuple[int, str]]:
    from asmevo.targets.amdgpu.program import Label
    out, idx = [], 0
    for item in fn.items:
        if isinstance(item, Label):
            out.append((idx, item.name))
        else:
            idx += 1
    return out


_REPAIRABLE = ("mismatch", "nondeterministic", "fault", "timeout", "hazard", "waitcnt", "abi",
               "build", "unsupported")


@mutation("llm_repair", targets=("amdgpu",))
class LLMRepair(LLMOperator):
    """A rejected candidate and its verdict: ask for the smallest fix.

    If ``individual`` itself was rejected, its last edit is repaired in place
    (the fix replaces the lines that edit put in). Otherwise the newest
    rejected attempt in the notebook whose window fits is repaired on top of
    ``individual``.
    """

    def _target(self, individual, context: OperatorContext):
        edits, status = individual.edits, individual.status
        program = context.program(individual)
        if edits and status in _REPAIRABLE:
            e = edits[-1]
            att = next((a for a in context.notebook if a.edit is not None and a.edit.key == e.key),
                       None)
            parent = context.program(replace(individual, edits=edits[:-1]))
            original = [i.text for i in parent.function(e.function).instructions[e.start:e.end]]
            reason = att.reason if att else status
            return program, e.function, e.start, e.start + len(e.lines), original, e, status, \
                reason, individual.eval_key
        fn = program.function(context.kernel)
        n = len(fn.instructions)
        labels = [i for i, _ in _label_positions(fn)]
        for a in context.notebook:
            e = a.edit
            if e is None or a.status not in _REPAIRABLE or e.function != context.kernel:
                continue
            # the attempt was made on another program: its window must still be one this
            # individual can take (inside the function, across no label), else the repair
            # is a paid call whose edit cannot apply
            if e.end <= n and not any(e.start < i < e.end for i in labels):
                ins = program.function(e.function).instructions
                original = [i.text for i in ins[e.start:e.end]]
                return program, e.function, e.start, e.end, original, e, a.status, a.reason, \
                    a.eval_key
        return None

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        t = self._target(individual, context)
        if t is None:
            return self._reject(context, "no rejected attempt to repair")
        program, fn_name, start, end, original, bad, status, reason, eval_key = t
        details: dict = {}
        fn = program.function(fn_name)
        # the full verdict (first mismatch, hazard rule, faulting address), from the archive
        v = context.verdict_of(eval_key) if eval_key else None
        if v is not None:
            status, reason, details = v.status, v.reason, dict(v.details)
        shown = _shown(program, fn_name, start, end, original)
        setup = self.setup(context, individual)
        request = prompts.repair_request(
            setup.config, kernel_text=self.kernel_text(context), function=shown,
            start=start, end=start + len(original), rejected_lines=list(bad.lines),
            status=status, reason=reason, details=details, notes=self.notes(context),
            extra=setup.extra)
        p, cid = self.ask(context, request, setup, individuals=[_ind_id(individual), bad.key],
                          sanitize=lines_of(setup, target=program.source.target,
                                            labels=set(fn.labels),
                                            original=original + list(bad.lines)))
        if isinstance(p, Rejected):
            return p
        return self.edit(context, individual, setup, program, (fn_name, start, end), p, cid)


def _shown(program, fn_name: str, start: int, end: int, original: list[str]):
    """The function as the repair prompt shows it: the original lines in the window."""
    from asmevo.targets.amdgpu.program import Instruction
    fn = program.function(fn_name)
    current = [i.text for i in fn.instructions[start:end]]
    if current == original:
        return fn
    return program.replace_window(fn_name, start, end,
                                  [Instruction(t) for t in original]).function(fn_name)


__all__ = ["BUDGET_SPENT", "LLMMutate", "LLMOperator", "LLMRepair", "Setup", "after_sanitize"]
