"""Individuals: K0 plus an ordered tuple of edits, identified by their built code's hash.

An individual is plain data, so it pickles to any worker and rebuilds from the
archive alone (``apply_edits(recover(K0), edits)``). ``eval_key`` is the hash
of the built code object (or, for a candidate that did not build, of its edit
list): two individuals with one ``eval_key`` are one candidate, judged once.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from asmevo.edits import Edit, edits_from_json, edits_to_json

K0_ID = "k0"


def chain_key(edits: tuple[Edit, ...]) -> str:
    """What an edit list does (who proposed each edit does not count)."""
    return hashlib.sha256("/".join(e.key for e in edits).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Individual:
    id: str
    edits: tuple[Edit, ...] = ()
    parents: tuple[str, ...] = ()
    island: int = 0
    generation: int = 0
    slot: int = 0
    operator: str = "k0"
    code_sha256: str | None = None
    eval_key: str = ""
    fitness: float = 0.0      # Evaluation.fitness: speedup when equal, else 0
    status: str = ""          # verdict status

    @property
    def chain(self) -> str:
        return chain_key(self.edits)

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def judged(self, *, code_sha256: str | None, eval_key: str, fitness: float,
               status: str) -> "Individual":
        return replace(self, code_sha256=code_sha256, eval_key=eval_key, fitness=fitness,
                       status=status)

    def to_row(self) -> dict:
        return {"ind_id": self.id, "island": self.island, "generation": self.generation,
                "slot": self.slot, "operator": self.operator,
                "parents": json.dumps(list(self.parents)), "edits": edits_to_json(self.edits),
                "n_edits": len(self.edits),
                "edit_summary": str(self.edits[-1]) if self.edits else "K0",
                "code_sha256": self.code_sha256, "eval_key": self.eval_key}

    @staticmethod
    def from_row(row: dict, *, fitness: float, status: str) -> "Individual":
        return Individual(id=row["ind_id"], edits=edits_from_json(row["edits"]),
                          parents=tuple(json.loads(row["parents"])), island=row["island"],
                          generation=row["generation"], slot=row["slot"],
                          operator=row["operator"], code_sha256=row["code_sha256"],
                          eval_key=row["eval_key"], fitness=fitness, status=status)


def same_candidate(a: Individual, b: Individual) -> bool:
    """Hall-of-fame similarity: one built code object is one entry."""
    return a.eval_key == b.eval_key
