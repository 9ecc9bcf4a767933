"""What the engine tells operators from the archive: profiles, verdicts, the lineage notebook.

Operators never read the archive. The engine fills their
:class:`~asmevo.operator.OperatorContext` with these read-only lookups,
all answered from committed rows (evaluations carry their verdict's details,
hot windows and per-line profile; agent tries carry what was tried where), so a
resumed run sees exactly what the uninterrupted run saw.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict

from asmevo.edits import Edit
from asmevo.engine import verdict_cache
from asmevo.verdict import Verdict
from asmevo.operator import Attempt, LineCost, LineProfile


class Feedback:
    """Lookups over one run's archive, cached by evaluation key (an LRU, thread-safe)."""

    def __init__(self, archive, context_key: str, run_id: int, size: int = 2048):
        self._archive = archive
        self._context_key = context_key
        self._run_id = run_id
        self._cache: OrderedDict[str, Verdict | None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def verdict_of(self, eval_key: str) -> Verdict | None:
        """The archived verdict of ``eval_key`` (None: not evaluated, e.g. an unborn try)."""
        with self._lock:
            if eval_key in self._cache:
                self._cache.move_to_end(eval_key)
                return self._cache[eval_key]
        row = verdict_cache.evaluations(self._archive, self._context_key,
                                        [eval_key]).get(eval_key)
        verdict = row["evaluation"].verdict if row else None
        with self._lock:
            self._cache[eval_key] = verdict
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return verdict

    def profile_of(self, individual) -> LineProfile | None:
        """The per-line profile the individual's evaluation kept (its hot windows' lines)."""
        verdict = self.verdict_of(individual.eval_key) if individual.eval_key else None
        return line_profile(verdict.details) if verdict is not None else None

    def lineage_of(self, generation: int):
        """``lineage(individual, limit)``: tries committed before ``generation`` by
        conversations on the individual or any of its ancestors, newest first."""
        def lineage(individual, limit: int) -> tuple[Attempt, ...]:
            if limit <= 0:
                return ()
            rows = self._archive.lineage_tries(self._run_id, individual.id,
                                               before_generation=generation, limit=limit)
            return tuple(_attempt(r) for r in rows)
        return lineage


def line_profile(details: dict) -> LineProfile | None:
    """A verdict's ``line_profile`` detail as a :class:`LineProfile` (None: none kept)."""
    raw = details.get("line_profile")
    if not isinstance(raw, dict) or not raw.get("ranges"):
        return None
    lines: dict[tuple[str, int], LineCost] = {}
    for function, start, execs, cycles, stalls in raw["ranges"]:
        for k, (e, c, s) in enumerate(zip(execs, cycles, stalls)):
            lines[(function, int(start) + k)] = LineCost(int(e), float(c), float(s))
    return LineProfile(str(raw.get("label", "modeled")), str(raw.get("unit", "cycles")), lines)


def _attempt(row: dict) -> Attempt:
    edit = Edit.from_json(json.loads(row["edit"]))
    return Attempt(row["generation"], row["operator"], str(edit), edit, row["status"],
                   row["reason"], row["speedup"], row["label"], row["eval_key"] or "")
