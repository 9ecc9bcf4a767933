"""Why a search found nothing: the dominant reasons, from the archive, in one line.

A search whose every proposal was refused (the static gate, an operator that
found no window) or whose every candidate was rejected must say so at its end,
instead of a bare "no speedup found". The reasons are grouped by their text
with numbers blanked (line indices and addresses differ from proposal to
proposal, the cause does not). :func:`refusal_reasons` gives the same per operator, for
``asmevo report`` and the dashboard.
"""
from __future__ import annotations

import re
from collections import Counter

_NUMBER = re.compile(r"(0x[0-9a-f]+|\d+)")
# a number standing alone (#71, [0:11], "1 op(s)"), not one inside a name (v14, b32_e32,
# .LBB_18fc) or a width (32-bit): what differs between proposals, not what they say
_LONE_NUMBER = re.compile(r"\b(0x[0-9a-f]+|\d+)\b(?!-bit)")
GATE_STATUSES = ("hazard", "waitcnt")


def _shape(reason: str, width: int = 110, number: re.Pattern = _NUMBER) -> str:
    first = reason.split("; ")[0].strip() or "no reason given"
    first = number.sub("N", first)
    return first if len(first) <= width else first[:width - 3] + "..."


REASON_CHARS = 400          # of a reason read when grouping (the first clause is what counts)
TOP_REASONS = 3


def refusal_reasons(conn, run_id: int, top: int = TOP_REASONS) -> list[dict]:
    """Per operator that proposed nothing at least once: how often (its ``none`` and
    ``error`` outcomes), and its ``top`` reasons with their counts, numbers blanked
    (``#N vs #N: the first reads its own destination``). Operators by that count, most first.

    SQLite groups the reasons' first clauses (cut to :data:`REASON_CHARS`); the numbers are
    blanked here. (Not by a Python function registered on the connection: the dashboard's
    threads share it, and a callback that needs the GIL inside a query while another
    thread holds the GIL and waits for the connection deadlocks.)"""
    rows = conn.execute(
        "SELECT operator, outcome, substr(reason, 1, min(?, instr(reason || '; ', '; ') - 1)) "
        "AS first, COUNT(*) FROM proposals WHERE run_id = ? AND outcome IN ('none', 'error') "
        "GROUP BY operator, outcome, first", (REASON_CHARS, run_id)).fetchall()
    per: dict[str, Counter] = {}
    for operator, outcome, first, n in rows:
        shape = _shape(first if isinstance(first, str) else "", 160, _LONE_NUMBER)
        text = shape if outcome == "none" else f"error: {shape}"
        per.setdefault(str(operator), Counter())[text] += int(n)
    out = [{"operator": op, "without_edit": sum(c.values()),
            "reasons": [{"reason": r, "count": n} for r, n in c.most_common(top)]}
           for op, c in per.items()]
    return sorted(out, key=lambda r: (-r["without_edit"], r["operator"]))


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
