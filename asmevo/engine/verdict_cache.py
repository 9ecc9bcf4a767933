"""The engine's side of the archive's verdict cache: Evaluations in, Evaluations out.

The archive stores plain data and imports nothing of asmevo (it is the bottom of
the package graph); these two functions are the one place that turns an
:class:`~asmevo.verdict.Evaluation` into that data and back.
"""
from __future__ import annotations

from typing import Iterable

from archive.store import Archive
from asmevo.verdict import Evaluation


def evaluations(archive: Archive, context_key: str, keys: Iterable[str]) -> dict[str, dict]:
    """Stored evaluations by key: ``{"evaluation": Evaluation, "run_id", "generation"}``."""
    found = archive.evaluations(context_key, keys)
    for row in found.values():
        row["evaluation"] = Evaluation.from_json(row["evaluation"])
    return found


def put_evaluation(archive: Archive, context_key: str, key: str, ev: Evaluation,
                   **where) -> bool:
    """Store ``ev`` unless this candidate has a row already (the first writer wins)."""
    return archive.put_evaluation(context_key, key, ev.to_json(), **where)
