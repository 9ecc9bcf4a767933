"""What the engine tells operators from the archive: profiles, verdicts, the lineage notebook,
the candidates a run tried (novelty) and what each model earned (ensembles).

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
from asmevo.operator import Attempt, LineCost, LineProfile, ModelRecord, novelty_key


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
    windows = tuple((str(w[0]), int(w[1]), int(w[2]), float(w[3]))
                    for w in details.get("hot_windows") or () if len(w) >= 4)
    return LineProfile(str(raw.get("label", "modeled")), str(raw.get("unit", "cycles")), lines,
                       windows)


def tried_edits(text: str) -> tuple[Edit, ...]:
    """An ``agent_tries`` row's edits on top of its parent: one edit's object, or the
    list of a stacked try (the conversation's accepted edits, then the one tried)."""
    raw = json.loads(text)
    return tuple(Edit.from_json(d) for d in (raw if isinstance(raw, list) else [raw]))


def _attempt(row: dict) -> Attempt:
    edits = tried_edits(row["edit"])
    edit = edits[-1]
    summary = str(edit) + (f" (on {len(edits) - 1} stacked edit(s))" if len(edits) > 1 else "")
    return Attempt(row["generation"], row["operator"], summary, edit, row["status"],
                   row["reason"], row["speedup"], row["label"], row["eval_key"] or "")


class Committed:
    """Rows of a run's committed generations, loaded once each, in generation order: the
    base of what the engine tells every operator about the whole population (every
    island). ``upto(g)`` first loads generations [loaded, g) with ``load(since, before)``
    and hands each row to ``add``; a context of generation g sees nothing of g itself,
    so a resumed generation sees exactly what the uninterrupted one saw."""

    def __init__(self, load, add):
        self._load, self._add = load, add
        self._until = 0
        self._lock = threading.Lock()

    def upto(self, generation: int) -> None:
        with self._lock:
            if generation > self._until:
                for row in self._load(self._until, generation):
                    self._add(row)
                self._until = generation


class Novelty:
    """Every candidate a run tried (individuals and agent tries), by the
    :func:`~asmevo.operator.novelty_key` of its edit chain from K0: what
    ``OperatorContext.seen`` answers. The same built code is caught later anyway (the
    verdict cache serves it, never verified twice); this catches an equal text before
    anything is built."""

    def __init__(self, archive, run_id: int):
        self._seen: dict[str, str] = {}
        self._rows = Committed(lambda a, b: archive.tried(run_id, a, b), self._add)

    def _add(self, row: dict) -> None:
        from asmevo.edits import edits_from_json
        chain = edits_from_json(row["base"]) + tried_edits(row["edits"])
        where = (f"gen {row['generation']} island {row['island']} slot {row['slot']}"
                 + (f" ({row['operator']} try {row['seq'] + 1})" if row["seq"] >= 0
                    else f" ({row['operator']}, individual {row['name']})"))
        self._seen.setdefault(novelty_key(chain), f"{where}: {row['status'] or 'not judged'}")

    def seen(self, generation: int):
        """``seen(chain)`` for proposals of ``generation``: where it was tried, or None
        (the generations before it are read when first asked)."""
        def seen(chain) -> str | None:
            self._rows.upto(generation)
            return self._seen.get(novelty_key(tuple(chain)))
        return seen


def model_records(archive, run_id: int, generation: int):
    """``model_records(operator)`` for proposals of ``generation``: what each model earned
    for that operator in the generations before (read once, when first asked)."""
    cache: dict[str, dict[str, ModelRecord]] = {}
    lock = threading.Lock()

    def records(operator: str) -> dict[str, ModelRecord]:
        with lock:
            if not cache:
                cache[""] = {}
                for r in archive.model_records(run_id, generation):
                    cache.setdefault(r["operator"], {})[r["model"]] = ModelRecord(
                        int(r["proposals"]), float(r["cost"] or 0.0), int(r["improvements"]))
            return dict(cache.get(operator, {}))

    return records
