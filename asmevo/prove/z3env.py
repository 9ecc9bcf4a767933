"""The solver, an optional extra (``pip install asmevo[prove]``): ``z3`` or None.

Every module that builds terms imports ``z3`` from here; :mod:`asmevo.prove`
imports none of them until :func:`available` says the solver is there, so without
it verification works as before and says ``tested``.

Every question goes to the solver through :func:`check`, which bounds what z3 may
allocate for it (``ASMEVO_PROVE_MEMORY_BYTES`` beyond what the process's terms already
hold) as the solver's ``timeout`` bounds its time: past either the answer is
``unknown`` and :func:`unknown_reason` says which. The bound is z3's high watermark,
which its solvers poll (answering ``unknown``, "max. memory exceeded"); z3's hard
limit (``memory_max_size``) is not used, since z3 aborts the process at it. z3 before
``memory_high_watermark_mb`` (Debian 12's 4.8.12) has only the byte-valued
``memory_high_watermark``, an unsigned 32-bit value: there the mark is set in bytes,
capped just under 4 GiB (:func:`_watermark_param`), rather than warned about on every
question.
"""
from __future__ import annotations

import weakref

from asmevo import knobs
from asmevo.memo import cached

try:                                    # pragma: no cover - depends on the install
    import z3
except ImportError:                     # pragma: no cover
    z3 = None

MEMORY_REASONS = ("max. memory exceeded", "memout")     # what z3 says past the watermark
TIME_REASONS = ("timeout", "canceled")                 # the time limit's
# per solver its last question: (z3's peak before it, the watermark it ran under)
_MARKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
PEAK = "max memory"     # z3's statistic: the most it has had allocated, in MB (process-wide)


def available() -> bool:
    return z3 is not None


def missing_reason() -> str:
    return "the solver is not installed (pip install 'asmevo[prove]' for z3-solver)"


@cached("prove.z3env.watermark_param", 1)
def _watermark_param() -> tuple[str, int]:
    """(name, bytes per unit) of the watermark parameter this z3 has:
    ``memory_high_watermark_mb`` (MB), else the older ``memory_high_watermark`` (bytes).
    Asked once, with z3's warnings off (then as they were): an old z3 prints its whole
    parameter list for an unknown name."""
    warnings = z3.get_param("warning")
    z3.set_param("warning", False)
    try:
        z3.get_param("memory_high_watermark_mb")
        return "memory_high_watermark_mb", 1
    except z3.Z3Exception:
        return "memory_high_watermark", 1 << 20
    finally:
        z3.set_param("warning", warnings == "true")


def _set_watermark(mark_mb: int) -> None:
    name, unit = _watermark_param()
    z3.set_param(name, mark_mb if unit == 1 else min(mark_mb * unit, (1 << 32) - 1))


def check(s):
    """``s.check()`` with z3's allocations bounded (module doc). The watermark is the
    allocation now plus the knob's bytes, set afresh for each question: memory the
    previous questions freed is reused, and one question past it leaves none after it
    refused. Between questions there is none (building terms is not bounded)."""
    mark = (z3.Z3_get_estimated_alloc_size() >> 20) + max(knobs.PROVE_MEMORY_BYTES.value >> 20, 1)
    _MARKS[s] = (_peak(s), mark)
    _set_watermark(mark)
    try:
        return s.check()
    finally:
        _set_watermark(0)


def unknown_reason(s) -> str:
    """Why ``s`` answered ``unknown``: z3's reason, or the memory bound (:func:`over_memory`)."""
    if over_memory(s):
        limit = knobs.PROVE_MEMORY_BYTES
        return (f"memory limit ({limit.value >> 20} MB for one question; "
                f"{limit.env} raises it)")
    return s.reason_unknown()


def over_memory(s) -> bool:
    """Whether ``s``'s last :func:`check` stopped at the memory bound. z3 names the bound
    only where its own solver stopped at it ("max. memory exceeded"); where a tactic did,
    it says the tactic failed, and where the time limit had passed first, "timeout". So
    the bound is also what z3's peak allocation (its ``max memory`` statistic, kept for
    the process) says: at or past the question's watermark, and either newly reached in
    this question or not out of time (a peak of an earlier question is no evidence
    against a time limit)."""
    why = s.reason_unknown()
    if why in MEMORY_REASONS:
        return True
    if s not in _MARKS:
        return False
    before, mark = _MARKS[s]
    peak = _peak(s)
    return peak >= mark and (peak > before or why not in TIME_REASONS)


def _peak(s) -> float:
    st = s.statistics()
    return st.get_key_value(PEAK) if PEAK in st.keys() else 0.0
