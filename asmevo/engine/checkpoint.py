"""Engine state ↔ JSON, written with the generation it follows in one transaction.

A checkpoint names individuals by id (their rows are in the same commit),
keeps the engine's ``random.Random`` state, the hall of fame in rank order,
the logbook and what each budget has spent. JSON rather than pickle: an old
checkpoint stays readable when classes change, and it can be inspected by hand.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from deap import tools

from asmevo.archive.store import ArchiveError
from asmevo.engine.budget import Spent
from asmevo.engine.individual import Individual

CHECKPOINT_VERSION = 1


@dataclass
class EngineState:
    generation: int                       # the last generation committed
    populations: list[list[Individual]]
    hall_of_fame: tools.HallOfFame
    rng: random.Random
    logbook: tools.Logbook
    spent: Spent


def encode(state: EngineState) -> dict:
    version, internal, gauss = state.rng.getstate()
    return {
        "version": CHECKPOINT_VERSION,
        "generation": state.generation,
        "populations": [[ind.id for ind in pop] for pop in state.populations],
        "hall_of_fame": [ind.id for ind in state.hall_of_fame],
        "rng": {"python": [version, list(internal), gauss]},
        "logbook": list(state.logbook),
        "logbook_header": list(state.logbook.header or []),
        "spent": state.spent.to_json(),
    }


def decode(doc: dict, individuals: dict[str, Individual], hof_size: int,
           similar) -> EngineState:
    """Rebuild the state; ``individuals`` maps every id the checkpoint names."""
    if doc.get("version") != CHECKPOINT_VERSION:
        raise ArchiveError(f"checkpoint version {doc.get('version')!r} is not "
                           f"{CHECKPOINT_VERSION}")
    try:
        pops = [[individuals[i] for i in pop] for pop in doc["populations"]]
        hof = tools.HallOfFame(hof_size, similar=similar)
        members = [individuals[i] for i in doc["hall_of_fame"]]
    except KeyError as exc:
        raise ArchiveError(f"checkpoint names individual {exc} that the archive lacks") from None
    hof.items = list(members)
    hof.keys = [m.fitness for m in reversed(members)]
    rng = random.Random()
    v, internal, gauss = doc["rng"]["python"]
    rng.setstate((v, tuple(internal), gauss))
    logbook = tools.Logbook()
    logbook.header = list(doc.get("logbook_header", [])) or None
    for rec in doc["logbook"]:
        logbook.record(**rec)
    return EngineState(int(doc["generation"]), pops, hof, rng, logbook,
                       Spent.from_json(doc["spent"]))


def named_ids(doc: dict) -> set[str]:
    return {i for pop in doc["populations"] for i in pop} | set(doc["hall_of_fame"])
