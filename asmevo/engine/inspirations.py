"""The accepted improvements of a run, and of earlier runs, as operators may quote them.

An operator that asks (``OperatorContext.inspirations(best, diverse)``) gets the
run's committed individuals that are equal to K0 and faster than their first
parent, from every island: the ``best`` by gain (the child's fitness over its
parent's), then ``diverse`` others, each chosen to bring a source not shown yet
(another island, another run) and edits least like the ones already chosen (by
the mnemonics they write). Each comes with its windows' actual lines, before
(the parent's program, rebuilt from its edits) and after.

``[run] knowledge`` names run directories of earlier runs: their improvements on
other kernels of the same target (another K0) join the diverse pool, their lines
before read from that run's K0, kept in its blob store. They are read once, when
first asked for: a user's accumulated knowledge, not a moving target.
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from asmevo.archive.blobs import BlobStore
from asmevo.archive.store import Archive, ArchiveError
from asmevo.edits import Edit, edits_from_json
from asmevo.engine.feedback import Committed
from asmevo.operator import Change, Inspiration
from asmevo.targets import ARCHIVED_BEFORE_TARGETS

log = logging.getLogger("asmevo.engine")
ALL = 2 ** 62                         # every generation


@dataclass(frozen=True)
class Found:
    """One improvement: the parent's edits, the edits the child added, what it gained."""

    source: str                       # "island 1, gen 3" | "run NAME (kernel K)"
    group: str                        # what diversity spreads over: an island, a run
    operator: str
    generation: int
    base: tuple[Edit, ...]
    added: tuple[Edit, ...]
    gain: float
    speedup: float
    label: str
    programs: Any                     # edits -> program, for this improvement's K0
    island: int = -1

    @property
    def features(self) -> frozenset:
        return frozenset([self.operator] + [t.split(" ", 1)[0] for e in self.added
                                            for t in e.lines])

    def inspiration(self) -> Inspiration:
        changes = []
        for k, e in enumerate(self.added):
            fn = self.programs(self.base + self.added[:k]).function(e.function)
            before = tuple(i.text for i in fn.instructions[e.start:e.end])
            changes.append(Change(e.function, e.start, e.end, before, tuple(e.lines)))
        return Inspiration(self.source, self.operator, tuple(changes), self.gain, self.speedup,
                           self.label or "modeled", self.island)


def found(row: dict, programs, *, source: str | None = None) -> Found | None:
    """An :meth:`Archive.improvements` row (None where the child does not extend its parent)."""
    edits, base = edits_from_json(row["edits"]), edits_from_json(row["parent_edits"])
    if [e.key for e in edits[:len(base)]] != [e.key for e in base] or len(edits) == len(base):
        return None
    island = -1 if source else int(row["island"])
    return Found(source or f"island {row['island']}, gen {row['generation']}",
                 source or f"island {row['island']}", row["operator"], int(row["generation"]),
                 base, edits[len(base):], float(row["fitness"]) / float(row["parent_fitness"]),
                 float(row["fitness"]), row["label"] or "", programs, island)


def _ranked(items: list[Found]) -> list[Found]:
    """Highest gain first (ties: the earlier), one per distinct added edits."""
    out, keys = [], set()
    for f in sorted(items, key=lambda f: -f.gain):       # stable: birth order among ties
        key = tuple(e.key for e in f.added)
        if key not in keys:
            keys.add(key)
            out.append(f)
    return out


def _distance(f: Found, chosen: list[Found]) -> float:
    if not chosen:
        return 1.0
    a = f.features
    return min(1.0 - len(a & c.features) / max(1, len(a | c.features)) for c in chosen)


def select(own: list[Found], other: list[Found], best: int, diverse: int) -> list[Found]:
    """The ``best`` of the run by gain, then ``diverse`` more from the rest of the run and
    from earlier runs: each one from a source not shown yet where there is one, then the
    least like those chosen, then the higher gain."""
    ranked = _ranked(own)
    chosen = ranked[:best]
    pool = ranked[best:] + _ranked(other)
    wanted = len(chosen) + diverse
    while pool and len(chosen) < wanted:
        shown = {c.group for c in chosen}
        k = max(range(len(pool)), key=lambda i: (pool[i].group not in shown,
                                                 _distance(pool[i], chosen), pool[i].gain, -i))
        chosen.append(pool.pop(k))
    return chosen


def knowledge(paths: tuple[Path, ...], *, target: str, k0_sha256: str,
              programs_for: Callable[[str], Any]) -> list[Found]:
    """Improvements of the runs in ``paths`` (run directories) on another K0 of ``target``;
    a run whose K0 is not in its blob store is left out, with a warning."""
    out: list[Found] = []
    for path in paths:
        db = path / "archive.db" if path.is_dir() else path
        blobs = BlobStore(db.parent / "blobs")
        with Archive(db, readonly=True) as archive:
            for run in archive.runs():
                cfg = json.loads(run["config_json"]).get("run", {})
                if cfg.get("target", ARCHIVED_BEFORE_TARGETS) != target or \
                        run["k0_sha256"] == k0_sha256:
                    continue
                k0 = archive.individuals(run["run_id"], ["k0"]).get("k0")
                try:
                    blob = blobs.path(k0["code_sha256"]) if k0 else None
                except ArchiveError:
                    blob = None
                if blob is None or not blob.is_file():
                    log.warning("knowledge: run %r in %s has no K0 in its blob store; "
                                "left out", run["name"], db)
                    continue
                programs = programs_for(str(blob))
                source = f"run {run['name']} (kernel {run['kernel']})"
                out += [f for r in archive.improvements(run["run_id"], 0, ALL)
                        if (f := found(r, programs, source=source)) is not None]
    return out


class Inspirations:
    """What ``OperatorContext.inspirations`` answers, per generation (thread-safe)."""

    def __init__(self, archive, run_id: int, programs: Callable, *,
                 knowledge_of: Callable[[], list[Found]] | None = None):
        self._own: list[Found] = []
        self._rows = Committed(lambda a, b: archive.improvements(run_id, a, b), self._add)
        self._programs = programs
        self._knowledge_of = knowledge_of
        self._other: list[Found] | None = None
        self._lock = threading.Lock()

    def _add(self, row: dict) -> None:
        f = found(row, self._programs)
        if f is not None:
            self._own.append(f)

    def _knowledge(self) -> list[Found]:
        with self._lock:
            if self._other is None:
                self._other = self._knowledge_of() if self._knowledge_of else []
            return self._other

    def for_generation(self, generation: int):
        """``inspirations(best, diverse)`` for proposals of ``generation``."""
        memo: dict[tuple[int, int], tuple[Inspiration, ...]] = {}
        lock = threading.Lock()

        def inspirations(best: int, diverse: int) -> tuple[Inspiration, ...]:
            with lock:
                if (best, diverse) not in memo:
                    self._rows.upto(generation)
                    own = [f for f in self._own if f.generation < generation]
                    other = self._knowledge() if diverse > 0 else []
                    memo[best, diverse] = tuple(
                        f.inspiration() for f in select(own, other, best, diverse))
                return memo[best, diverse]

        return inspirations
