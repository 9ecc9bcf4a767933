"""Several models behind one operator: which one a proposal asks.

``[[llm.models]]`` lists the models (each the shared ``[llm]`` settings with its own on
top: a model name, a server, a key variable, a weight). Every proposal (one call, or one
whole conversation) asks one of them, chosen with the proposal's own seeded ``Random``:

- ``ensemble = "weights"``: in proportion to the weights;
- ``ensemble = "bandit"``: Thompson sampling on accepted improvements per dollar. For
  each model, draw its improvement rate from Beta(1 + improvements, 1 + proposals -
  improvements) over the run's committed generations
  (``OperatorContext.model_records``: the engine reads them from the archive, which
  records each call's model and cost), divide by its mean cost per proposal (at least
  :data:`COST_FLOOR`, so a free local model is not infinitely cheap and an untried one
  costs the floor), multiply by its weight, and ask the highest. A model that earns more
  per dollar is asked more; one never asked is drawn from the flat prior, so it gets
  tried.

The draw uses only committed records and the proposal's seed, so a resumed run asks the
same model as the uninterrupted one. A single model draws nothing at all.
"""
from __future__ import annotations

import random
from typing import Mapping

from asmevo.operator import ModelRecord
from asmevo.operators.llm.config import Member

COST_FLOOR = 0.001      # $ per proposal: what a free or untried model is taken to cost


def score(member: Member, record: ModelRecord, rng: random.Random) -> float:
    """One Thompson draw of ``member``'s improvements per dollar, times its weight."""
    wins = min(record.improvements, record.proposals)
    rate = rng.betavariate(1 + wins, 1 + record.proposals - wins)
    per_proposal = record.cost / record.proposals if record.proposals else 0.0
    return member.weight * rate / max(COST_FLOOR, per_proposal)


def choose(members: tuple[Member, ...], mode: str, rng: random.Random,
           records: Mapping[str, ModelRecord]) -> int:
    """The index of the member a proposal asks (see the module docstring)."""
    if len(members) == 1:
        return 0
    if mode == "bandit":
        scores = [score(m, records.get(m.config.model, ModelRecord()), rng) for m in members]
        return max(range(len(members)), key=lambda i: (scores[i], -i))
    return rng.choices(range(len(members)), weights=[m.weight for m in members])[0]
