"""Whether the operators can work at all: before the search, and after each generation.

A search whose LLM operator has no key, or a server that is down or does not know
its model, used to spend its whole wall-clock budget on retries and exit 0 having
said nothing. Now:

* before K0 is judged, every operator with a weight that can check its setup
  (:class:`~asmevo.operator.Preflight`) does; one that cannot work raises
  :class:`~asmevo.operator.OperatorUnusable`, and the run stops with that line;
* an operator whose every proposal of a generation raised OperatorUnusable (the
  server died mid-run, a key was revoked, a setup the pre-flight could not
  confirm) stops the run after that generation is committed.

Either way the run is marked ``failed`` with the line as its stop reason and
:class:`UnusableSetup` is raised: the command prints one line and exits nonzero,
and ``asmevo resume`` continues the run once the setup is fixed (checking it again
first).
"""
from __future__ import annotations

import random
import time

from asmevo.errors import AsmevoError
from asmevo.operator import OperatorContext, OperatorUnusable, Preflight

OPERATOR = "preflight"      # the operator a pre-flight's spend is recorded under


class UnusableSetup(AsmevoError):
    """An operator cannot work in this run's setup; the run stopped (resumable)."""


def check_operators(engine) -> list[str]:
    """Each operator's pre-flight lines, in config order; UnusableSetup when one cannot
    work. Operators that share a service ask it once (the ``done`` checks)."""
    state, done, lines = engine.state, {}, []
    wall = engine.config.budget.wall_seconds
    deadline = None if wall is None else time.monotonic() + wall - state.spent.wall_seconds
    for op, weight in engine.operators:
        if weight <= 0 or not isinstance(op, Preflight):
            continue
        ctx = OperatorContext(k0=engine.programs.k0, kernel=engine.evaluator.kernel,
                              rng=random.Random(0), program_of=engine.programs,
                              spend=engine.spend, deadline=deadline,
                              where={"run_id": engine.run_id, "generation": state.generation + 1,
                                     "operator": OPERATOR})
        try:
            lines += op.preflight(ctx, done)
        except OperatorUnusable as exc:
            raise UnusableSetup(f"pre-flight: {exc.message}") from None
    return lines


def unusable_operator(generation: int, plans, proposals) -> str | None:
    """The line saying which operator failed every proposal of ``generation`` because its
    setup cannot work (``Proposed.unusable``), or None."""
    made: dict[str, list] = {}
    for plan, p in zip(plans, proposals):
        made.setdefault(plan.operator.name, []).append(p)
    for name, ps in made.items():
        if all(p.unusable for p in ps):
            return (f"generation {generation}: every {name} proposal failed ({len(ps)} of "
                    f"{len(ps)}): {ps[0].reason}")
    return None
