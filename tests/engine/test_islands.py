"""Selection and migration: pure, deterministic, DEAP-backed, no global RNG leaks."""
from __future__ import annotations

import random
from dataclasses import dataclass

from asmevo.engine.islands import migrate_ring
from asmevo.engine.selection import best, tournament, worst_indices


@dataclass(frozen=True)
class Ind:
    id: str
    fitness: float


def _pops():
    return [[Ind(f"{i}.{j}", float(10 * i + j)) for j in range(4)] for i in range(3)]


def test_ring_migration_moves_best_to_next_islands_worst():
    pops = _pops()
    out = migrate_ring(pops, 1)
    assert pops == _pops()                       # inputs untouched
    assert out[1][0] == pops[0][3]               # island 0's best replaced island 1's worst
    assert out[2][0] == pops[1][3]               # emigrants come from the old populations
    assert out[0][0] == pops[2][3]               # a ring
    assert [len(p) for p in out] == [4, 4, 4]


def test_ring_migration_edge_cases():
    pops = _pops()
    assert migrate_ring(pops[:1], 2) == pops[:1]
    assert migrate_ring(pops, 0) == pops
    out = migrate_ring(pops, 2)
    assert {x.id for x in out[1][:2]} == {"0.3", "0.2"}


def test_ties_break_by_position():
    pop = [Ind("a", 1.0), Ind("b", 1.0), Ind("c", 0.0), Ind("d", 0.0)]
    assert [x.id for x in best(pop, 2)] == ["a", "b"]
    assert worst_indices(pop, 2) == [3, 2]


def test_tournament_uses_only_the_given_rng():
    pop = _pops()[0] + _pops()[1]
    random.seed(123)
    before = random.getstate()
    a = tournament(pop, 5, 3, random.Random(9))
    b = tournament(pop, 5, 3, random.Random(9))
    assert a == b
    assert random.getstate() == before
    rng = random.Random(9)
    tournament(pop, 5, 3, rng)
    assert rng.getstate() != random.Random(9).getstate()   # the engine's RNG advanced
