"""Edits an agent tries during a proposal: judged by the engine like any candidate.

An LLM agent (``llm_agent``) may ask, mid-conversation, what the verifier says
about an edit before it commits to one. The operator never runs anything: it
calls ``OperatorContext.try_edit``, which is :meth:`Tries.for_plan`'s callback.
The engine then builds, gates, runs and times the candidate (the parent's edits
plus the tried one) through the same evaluator and pool as every offspring,
stores a fresh evaluation in the archive at once (the verdict cache: a resumed
run gets it back instead of running it again) and counts it in the run's
evaluation budget, which is a hard limit: a try the budget cannot pay for is
refused with that reason, and not evaluated.

Counting matches the offspring's rules, so a resumed generation counts what the
uninterrupted one did: an evaluation this run stored at this generation costs
(a kill may have interrupted the generation after storing it), a cached one from
elsewhere is free, a build failure is free and is written with the generation.
A try that becomes the proposal's offspring is counted once. The tries
themselves (``agent_tries`` rows) are written in the generation's transaction; a
try on top of a conversation's earlier accepted edits (its stack) stores them all,
in order, as its ``edit``.
"""
from __future__ import annotations

import itertools
import json
import threading
from typing import Callable

from asmevo.edits import Edit, as_edits
from asmevo.engine import verdict_cache
from asmevo.engine.parallel import build_task, evaluate_task
from asmevo.verdict import Evaluation
from asmevo.operator import TryResult

# verdict details an agent has no use for in a tool result (the try's own profile)
_BULKY = ("hot_windows", "line_profile")


class Tries:
    """One generation's tried edits (thread-safe: proposals may run in threads)."""

    def __init__(self, engine, generation: int, *, allowed: int | None,
                 counted: frozenset = frozenset()):
        self._engine = engine
        self._g = generation
        self._allowed = allowed          # fresh evaluations the budget pays for, None: any
        self._counted = counted          # keys this generation counted already (K0)
        self._lock = threading.Lock()
        self._seen: dict[str, Evaluation] = {}
        self.fresh: dict[str, bool] = {}           # paid-for key -> equal
        self.failed: list[tuple[str, Evaluation]] = []   # build failures, written at commit
        self.rows: list[dict] = []

    def for_plan(self, plan) -> Callable[[Edit | tuple[Edit, ...]], TryResult]:
        """The ``try_edit`` callback of one proposal: an edit, or edits in order (an
        agent's stack of accepted edits and the new one), on top of ``plan.parent``."""
        counter = itertools.count()

        def try_edit(edits: Edit | tuple[Edit, ...]) -> TryResult:
            try:
                edits = as_edits(edits)
            except TypeError as exc:
                raise TypeError(f"try_edit takes an Edit or a tuple of Edits: {exc}") from None
            with self._lock:
                result = self._judge(plan.parent.edits + edits)
                self.rows.append(_row(self._g, plan, next(counter), edits, result))
            return result

        return try_edit

    def _judge(self, edits: tuple[Edit, ...]) -> TryResult:
        eng = self._engine
        key, data, verdict = next(iter(eng.pool.map(build_task, eng.evaluator, [edits])))
        ev = self._seen.get(key)
        if ev is not None:
            return result_of(ev, fresh=False)
        hit = verdict_cache.judged(eng.archive, eng.context_key, key)
        costs = key not in self._counted and (
            hit is None and verdict is None
            or hit is not None and hit["run_id"] == eng.run_id and hit["generation"] == self._g)
        if costs and self._allowed is not None and len(self.fresh) >= self._allowed:
            return TryResult("refused", refused=f"not evaluated: budget.evaluations spent "
                             f"({eng.config.budget.evaluations} evaluations)")
        if hit is not None:
            ev = hit["evaluation"]
        elif verdict is not None:
            ev = Evaluation(key, verdict, None, 0.0)
            self.failed.append((key, ev))
        else:
            ev = next(iter(eng.pool.map(evaluate_task, eng.evaluator, [edits],
                                        gpu=eng.config.gpu)))
            ev = eng.stored(self._g, key, edits, data, ev)
        if costs:
            self.fresh[key] = ev.verdict.equal
        self._seen[key] = ev
        return result_of(ev, fresh=costs)


def result_of(ev: Evaluation, *, fresh: bool) -> TryResult:
    """The tool-facing view of an evaluation."""
    v = ev.verdict
    details = {k: x for k, x in v.details.items() if k not in _BULKY}
    return TryResult(v.status, v.reason, details, ev.fitness if v.equal else None,
                     ev.timing.label if ev.timing is not None else None, ev.code_sha256, fresh)


def _row(generation: int, plan, seq: int, edits: tuple[Edit, ...], r: TryResult) -> dict:
    """One try: its ``edit`` is the edit's JSON object, or the list of them (the stack
    below it first) when it went on top of earlier accepted edits."""
    tried = edits[0].to_json() if len(edits) == 1 else [e.to_json() for e in edits]
    return {"generation": generation, "island": plan.island, "slot": plan.slot,
            "seq": seq, "operator": plan.operator.name, "parent": plan.parent.id,
            "edit": json.dumps(tried, sort_keys=True, separators=(",", ":")),
            "eval_key": r.eval_key, "status": r.status, "reason": (r.refused or r.reason)[:1000],
            "speedup": r.speedup, "label": r.label, "fresh": int(r.fresh)}
