"""Process-wide statistics counters, one home: how often a fast path was taken, gave up,
was declined. Each group is a :class:`Counters` (a dict of named counts) made once with
:func:`group`, so one API reads and resets them all: ``increment``, :func:`snapshot`,
:func:`reset`.

Counts are per process (a forked worker counts its own) and never decide anything: a
benchmark or test reads a group before and after, and reports the difference.
"""
from __future__ import annotations

GROUPS: dict[str, "Counters"] = {}


class Counters(dict):
    """One group of counts; its keys are fixed when it is made (a count of an unknown
    key is a bug, and raises ``KeyError``)."""

    def __init__(self, name: str, keys: tuple[str, ...]):
        super().__init__(dict.fromkeys(keys, 0))
        self.name = name

    def increment(self, key: str, n: int = 1) -> None:
        self[key] += n          # KeyError for a key the group was not made with

    def __setitem__(self, key: str, value: int) -> None:
        if key not in self:
            raise KeyError(f"counter group {self.name} has no count {key!r} "
                           f"(it has {', '.join(self)})")
        super().__setitem__(key, value)

    def snapshot(self) -> dict[str, int]:
        return dict(self)

    def reset(self) -> None:
        for key in self:
            super().__setitem__(key, 0)


def group(name: str, keys: tuple[str, ...]) -> Counters:
    """The counter group ``name`` with counts ``keys``, all 0 (a module reloaded makes
    its group afresh)."""
    GROUPS[name] = Counters(name, keys)
    return GROUPS[name]


def increment(name: str, key: str, n: int = 1) -> None:
    GROUPS[name].increment(key, n)


def snapshot() -> dict[str, dict[str, int]]:
    """Every group's counts now, by group name (copies: later counts do not change it)."""
    return {name: g.snapshot() for name, g in sorted(GROUPS.items())}


def reset(name: str | None = None) -> None:
    """Zero the counts of group ``name``, or of every group."""
    for g in ([GROUPS[name]] if name is not None else GROUPS.values()):
        g.reset()
