"""The engine's side of the archive's verdict cache: Evaluations in, Evaluations out.

The archive stores plain data and imports nothing of asmevo (it is the bottom of
the package graph); these two functions are the one place that turns an
:class:`~asmevo.verdict.Evaluation` into that data and back. :class:`KnownKeys` is the
hint a pool's workers get of which keys the archive already holds.
"""
from __future__ import annotations

import hashlib
from typing import Iterable

from asmevo.archive.store import NO_VERDICT, Archive
from asmevo.verdict import Evaluation

WORKER_DIED = NO_VERDICT         # the status of an evaluation whose process was killed


def evaluations(archive: Archive, context_key: str, keys: Iterable[str]) -> dict[str, dict]:
    """Stored evaluations by key: ``{"evaluation": Evaluation, "run_id", "generation"}``."""
    found = archive.evaluations(context_key, keys)
    for row in found.values():
        row["evaluation"] = Evaluation.from_json(row["evaluation"])
    return found


def judged(archive: Archive, context_key: str, key: str) -> dict | None:
    """The stored evaluation of ``key`` that stands as the candidate's verdict (as
    :func:`evaluations` gives it); None where there is none, or where its process was
    killed on both tries (``worker-died`` says nothing about the candidate: it is judged
    again, and the new verdict replaces that row)."""
    row = evaluations(archive, context_key, [key]).get(key)
    return None if row is None or row["evaluation"].verdict.status == WORKER_DIED else row


def put_evaluation(archive: Archive, context_key: str, key: str, ev: Evaluation,
                   **where) -> bool:
    """Store ``ev`` unless this candidate has a row already (the first writer wins; a
    ``worker-died`` row gives way to a verdict)."""
    return archive.put_evaluation(context_key, key, ev.to_json(), **where)


def _prefix(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=8).digest()


class KnownKeys:
    """The keys one context's rows in the archive name, as a blob a worker can search.

    A hint that saves work, never a verdict: the parent sends it with each candidate,
    and the worker that built a candidate whose key it holds does not evaluate it (the
    archive has its verdict). A key missing from it (a row another writer has just
    stored) is evaluated, and the archive's row still wins; one wrongly in it (two
    keys sharing an 8-byte prefix) is evaluated by the parent after all."""

    def __init__(self, archive: Archive, context_key: str):
        self._set = {_prefix(k) for k in archive.evaluation_keys(context_key)}
        self._blob: bytes | None = None

    def add(self, key: str) -> None:
        p = _prefix(key)
        if p not in self._set:
            self._set.add(p)
            self._blob = None

    def blob(self) -> bytes:
        """The prefixes sorted, 8 bytes each (kept until a key is added)."""
        if self._blob is None:
            self._blob = b"".join(sorted(self._set))
        return self._blob


def holds(blob: bytes, key: str) -> bool:
    """Whether :meth:`KnownKeys.blob` ``blob`` names ``key`` (a binary search)."""
    p, lo, hi = _prefix(key), 0, len(blob) // 8
    while lo < hi:
        mid = (lo + hi) // 2
        if blob[8 * mid:8 * mid + 8] < p:
            lo = mid + 1
        else:
            hi = mid
    return blob[8 * lo:8 * lo + 8] == p
