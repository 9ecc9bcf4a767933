"""Why a search found nothing: the dominant reasons, from the archive, in one line.

A search whose every proposal was refused (the static gate, an operator that
found no window) or whose every candidate was rejected must say so at its end,
instead of a bare "no speedup found". The reasons are grouped by their text
with numbers blanked (line indices and addresses differ from proposal to
proposal, the cause does not).
"""
from __future__ import annotations

import re
from collections import Counter

_NUMBER = re.compile(r"(0x[0-9a-f]+|\d+)")
GATE_STATUSES = ("hazard", "waitcnt")


def _shape(reason: str, width: int = 110) -> str:
    first = reason.split("; ")[0].strip() or "no reason given"
    first = _NUMBER.sub("N", first)
    return first if len(first) <= width else first[:width - 3] + "..."


def _top(counter: Counter, n: int = 3) -> str:
    return "; ".join(f"{k} ({v}x)" for k, v in counter.most_common(n))


def why_nothing(archive, run_id: int) -> str | None:
    """One sentence on why no candidate was accepted (None when one was)."""
    rows = archive.proposal_outcomes(run_id)
    if not rows:
        return "no proposal was made"
    if any(st == "equal" for _, _, st, _ in rows):
        return None
    refused, nothing, rejected = Counter(), Counter(), Counter()
    statuses = Counter()
    for outcome, why, status, verdict in rows:
        if outcome != "edit":
            (refused if "static gate" in why else nothing)[_shape(why)] += 1
        elif status in GATE_STATUSES:
            refused[f"{status}: {_shape(verdict or '')}"] += 1
        else:
            statuses[status or "unjudged"] += 1
            rejected[f"{status or 'unjudged'}: {_shape(verdict or '')}"] += 1
    n = len(rows)
    if sum(refused.values()) == n:
        return f"all {n} proposals were refused by the static gate: {_top(refused)}"
    if sum(nothing.values()) == n:
        return f"all {n} proposals proposed nothing: {_top(nothing)}"
    parts = []
    if refused:
        parts.append(f"{sum(refused.values())} refused by the static gate ({_top(refused, 2)})")
    if nothing:
        parts.append(f"{sum(nothing.values())} proposed nothing ({_top(nothing, 2)})")
    if rejected:
        parts.append(f"{sum(rejected.values())} candidates rejected ("
                     + ", ".join(f"{k} {v}" for k, v in statuses.most_common()) + "; "
                     + _top(rejected, 2) + ")")
    return f"of {n} proposals, " + "; ".join(parts)
