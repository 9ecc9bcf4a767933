"""What each LLM call cost, how it reaches the archive, and the cost of an improvement.

Call ids and a kill during a call
---------------------------------
Every call has a deterministic id, :func:`call_id` over the run, the
individual(s), the operator and where the call happens (generation, island,
slot). The engine redoes an uncommitted generation on resume with the same
seeds, so a repeated call gets the same id.

The archive commits each call's usage row *at once* (the engine's
``LlmSpend.record``: money spent is recorded even if the run then dies), with
the prompt text under its sha256 and the answer. Then:

- killed while the request is in flight: nothing is recorded; on resume the
  call is sent again and recorded once (the provider may bill the lost
  request; the archive never counts a call twice);
- killed after the answer was recorded, before the generation's candidates
  and checkpoint were committed: on resume the operator finds the call id
  already recorded (``recorded(call_id)``), re-parses the stored answer and
  proposes the same edit: nothing is sent, nothing is charged again;
- the usage table's unique (run, call id) makes a double insert a no-op even
  if a caller replays a step by mistake.

``recorded`` and the answer column are what the operator needs from the
archive for the second case; where the hook lacks them, the call is sent again
on resume (charged once more, and recorded as a second row).
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Iterable

from asmevo.operators.llm.pricing import Usage
from asmevo.operator import LlmCall


def call_id(run_id: str, individuals: Iterable[str], operator: str, where: dict) -> str:
    """Same inputs, same id: how a resumed run recognises a call it already paid for."""
    body = json.dumps([str(run_id), list(individuals), operator,
                       sorted((str(k), str(v)) for k, v in where.items() if k != "operator")],
                      separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:24]


def request_text(request: dict) -> str:
    """Canonical text of a request body. It never holds the key (that is a header)."""
    return json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class CallRecord:
    """One call as the operator knows it (all HTTP attempts), before it becomes a row."""

    call_id: str
    operator: str
    model: str
    prompt: str                      # request_text(request)
    usage: Usage
    cost: float
    status: str                      # proposed | rejected | no_tool | reused
    reason: str = ""
    answer: dict | None = None       # the tool call's input, verbatim

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode()).hexdigest()


def hook_call(record: CallRecord) -> LlmCall:
    """The row the spend hook records for one call (with its status, reason and answer,
    what lets a resumed run reuse an answer instead of paying for it twice)."""
    return LlmCall(call_id=record.call_id, model=record.model, prompt=record.prompt,
                      tokens_in=record.usage.input_tokens, tokens_out=record.usage.output_tokens,
                      cost=record.cost, cache_read_tokens=record.usage.cache_read_input_tokens,
                      cache_write_tokens=record.usage.cache_creation_input_tokens,
                      status=record.status, reason=record.reason,
                      answer=None if record.answer is None else json.dumps(record.answer,
                                                                           sort_keys=True))


class MemoryLedger:
    """An in-memory spend hook (the engine's ``SpendHook`` plus ``recorded``).

    For tests and for running operators without an archive. Rows are keyed by
    call id: the first write wins, like the archive's unique key.
    """

    def __init__(self, limit: float | None = None):
        self.limit = limit
        self.rows: dict[str, dict] = {}
        self.prompts: dict[str, str] = {}
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return float("inf") if self.limit is None else max(0.0, self.limit - self.spent())

    def spent(self) -> float:
        with self._lock:
            return sum(r["cost"] for r in self.rows.values())

    def record(self, call, where: dict) -> None:
        sha = hashlib.sha256(call.prompt.encode()).hexdigest()
        with self._lock:
            self.prompts.setdefault(sha, call.prompt)
            self.rows.setdefault(call.call_id, {
                "call_id": call.call_id, "operator": where.get("operator", ""),
                "generation": where.get("generation", -1), "island": where.get("island", -1),
                "slot": where.get("slot", -1), "model": call.model, "prompt_sha256": sha,
                "tokens_in": call.tokens_in, "tokens_out": call.tokens_out,
                "cache_read_tokens": call.cache_read_tokens,
                "cache_write_tokens": call.cache_write_tokens, "cost": call.cost,
                "status": call.status, "reason": call.reason,
                "answer": call.answer, "turn": where.get("turn")})

    def recorded(self, call_id: str) -> dict | None:
        with self._lock:
            return self.rows.get(call_id)


# -- report ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpendLine:
    calls: int
    usage: Usage
    cost: float
    improvements: int

    @property
    def cost_per_improvement(self) -> float | None:
        return self.cost / self.improvements if self.improvements else None


def spend_report(rows: Iterable[dict],
                 improved_call_ids: Iterable[str] = ()) -> dict[str, SpendLine]:
    """Spend per operator and in total, and the cost per accepted improvement.

    ``rows`` are usage rows (the archive's ``llm_usage`` or a ledger's);
    ``improved_call_ids`` the calls whose candidate was equal to K0 and faster. An
    improvement is one proposal (generation, island, slot), however many calls its
    conversation made: an agent's turns share one improvement.
    """
    improved = set(improved_call_ids)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get("operator", "") or "?", []).append(r)

    def line(rs: list[dict]) -> SpendLine:
        u = Usage()
        for r in rs:
            u = u + Usage(int(r["tokens_in"]), int(r["tokens_out"]),
                          int(r.get("cache_write_tokens", 0)), int(r.get("cache_read_tokens", 0)))
        return SpendLine(len(rs), u, sum(float(r["cost"]) for r in rs),
                         len({_slot(r) for r in rs if r["call_id"] in improved}))

    out = {op: line(rs) for op, rs in sorted(groups.items())}
    out["total"] = line([r for rs in groups.values() for r in rs])
    return out


def _slot(row: dict) -> tuple:
    return (row.get("generation"), row.get("island"), row.get("slot"), row.get("operator"),
            row["call_id"] if row.get("generation") is None else None)

def archive_spend_report(archive, run_id: int) -> dict[str, SpendLine]:
    """:func:`spend_report` straight from an archive's tables."""
    return spend_report(archive.llm_usage(run_id), archive.improved_calls(run_id))


def render_report(report: dict[str, SpendLine]) -> str:
    rows = ["operator         calls    in_tok   out_tok  cache_w  cache_r     cost_$  "
            "improved  $/improvement"]
    for op, s in report.items():
        per = f"{s.cost_per_improvement:.4f}" if s.cost_per_improvement is not None else "-"
        rows.append(f"{op:<15} {s.calls:>6} {s.usage.input_tokens:>9} {s.usage.output_tokens:>9}"
                    f" {s.usage.cache_creation_input_tokens:>8}"
                    f" {s.usage.cache_read_input_tokens:>8}"
                    f" {s.cost:>10.4f} {s.improvements:>9}  {per:>13}")
    return "\n".join(rows)
