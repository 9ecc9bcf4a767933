"""Selection on plain lists with an explicit RNG.

DEAP's selectors draw from the module-level ``random``; the engine owns one
``random.Random`` whose state is checkpointed. :func:`tournament` lends DEAP
that state for the call and takes it back, so a resumed run draws exactly the
numbers an uninterrupted one would.
"""
from __future__ import annotations

import contextlib
import random
import threading
from typing import Iterator, Sequence, TypeVar

from deap import tools

T = TypeVar("T")
_GLOBAL_RANDOM = threading.Lock()


@contextlib.contextmanager
def lend_random(rng: random.Random) -> Iterator[None]:
    """Run DEAP code that uses ``random`` with ``rng``'s state; restore both after."""
    with _GLOBAL_RANDOM:
        saved = random.getstate()
        random.setstate(rng.getstate())
        try:
            yield
        finally:
            rng.setstate(random.getstate())
            random.setstate(saved)


def tournament(population: Sequence[T], k: int, size: int, rng: random.Random) -> list[T]:
    """``k`` winners of tournaments of ``size`` (``deap.tools.selTournament``). A lone
    member wins every tournament: no number is drawn."""
    if len(population) == 1:
        return [population[0]] * k
    with lend_random(rng):
        return tools.selTournament(list(population), k, min(size, len(population)))


def ranked(population: Sequence[T]) -> list[int]:
    """Indices best first; ties keep population order (stable, so deterministic)."""
    return sorted(range(len(population)), key=lambda i: (-population[i].fitness, i))


def best(population: Sequence[T], k: int) -> list[T]:
    return [population[i] for i in ranked(population)[:k]]


def worst_indices(population: Sequence[T], k: int) -> list[int]:
    """Positions of the ``k`` worst, worst first (ties: later positions first)."""
    return list(reversed(ranked(population)))[:k]
