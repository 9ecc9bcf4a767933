"""Per-run budgets: evaluations, wall-clock seconds, LLM dollars.

The engine checks them between generations and stops cleanly (a committed
checkpoint, the run marked finished with the reason) as soon as one is spent.
The evaluation budget is a hard limit: a generation evaluates only as many
fresh candidates as the budget still pays for (the engine leaves the rest
unborn), so the count never exceeds it, in parallel and across resumes too.
Wall-clock seconds may be overrun by the generation in flight. LLM spend is also
visible to operators mid-generation, through :class:`LlmSpend`, so they can
refuse a call that the budget cannot pay.
"""
from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass

from asmevo.engine.config import BudgetConfig
from asmevo.operator import LlmCall


@dataclass
class Spent:
    evaluations: int = 0        # fresh evaluations (the verdict cache serves the rest)
    wall_seconds: float = 0.0   # time spent in generations, over every resume
    llm_dollars: float = 0.0
    accepted: int = 0           # fresh evaluations that were equal (not a budget)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "Spent":
        return Spent(int(d["evaluations"]), float(d["wall_seconds"]), float(d["llm_dollars"]),
                     int(d.get("accepted", 0)))


def exhausted(budget: BudgetConfig, spent: Spent) -> str | None:
    """The name of the first spent budget, or None."""
    if budget.evaluations is not None and spent.evaluations >= budget.evaluations:
        return "budget.evaluations"
    if budget.wall_seconds is not None and spent.wall_seconds >= budget.wall_seconds:
        return "budget.wall_seconds"
    if budget.llm_dollars is not None and spent.llm_dollars >= budget.llm_dollars:
        return "budget.llm_dollars"
    return None


def fraction_done(budget: BudgetConfig, spent: Spent, generation: int,
                  generations: int) -> float:
    """How far the run is towards its first limit (for the ETA)."""
    parts = [generation / generations if generations else 1.0]
    if budget.evaluations:
        parts.append(spent.evaluations / budget.evaluations)
    if budget.wall_seconds:
        parts.append(spent.wall_seconds / budget.wall_seconds)
    if budget.llm_dollars:
        parts.append(spent.llm_dollars / budget.llm_dollars)
    return max(0.0, min(1.0, max(parts)))


class LlmSpend:
    """The operators' spend hook: records each call in the archive at once.

    ``spent`` is the exact sum (``math.fsum``) of the run's recorded costs, so it
    does not depend on the order the calls were recorded in nor on where a run
    was killed and resumed: the checkpoints of a resumed run equal an
    uninterrupted run's to the bit. ``spent`` given: the starting total instead
    of the archive's rows.
    """

    def __init__(self, archive, run_id: int, limit: float | None, spent: float | None = None):
        self._archive = archive
        self._run_id = run_id
        self._limit = limit
        self._lock = threading.Lock()
        if spent is None:
            self._costs = archive.llm_costs(run_id)
        else:
            self._costs = [float(spent)]

    @property
    def spent(self) -> float:
        with self._lock:
            return math.fsum(self._costs)

    def remaining(self) -> float:
        spent = self.spent
        return float("inf") if self._limit is None else max(0.0, self._limit - spent)

    def recorded(self, call_id: str) -> dict | None:
        """The stored row of a call this run already paid for (its answer included)."""
        return self._archive.llm_call(self._run_id, call_id)

    def record(self, call: LlmCall, where: dict) -> None:
        """Store the call and its prompt; extra fields (status, reason, answer) if present."""
        prompt_sha = self._archive.put_prompt(call.prompt)
        stored = self._archive.put_llm_usage(self._run_id, {
            "generation": where.get("generation", -1), "island": where.get("island", -1),
            "slot": where.get("slot", -1), "operator": where.get("operator", ""),
            "call_id": call.call_id, "model": call.model, "prompt_sha256": prompt_sha,
            "tokens_in": call.tokens_in, "tokens_out": call.tokens_out,
            "cache_read_tokens": call.cache_read_tokens,
            "cache_write_tokens": call.cache_write_tokens, "cost": call.cost,
            "status": call.status, "reason": call.reason,
            "answer": call.answer, "turn": where.get("turn")})
        if stored:
            with self._lock:
                self._costs.append(float(call.cost))
