"""Whole searches (``asmevo run``) against a hostile LLM server: the run's limits hold.

The issue's attacks, end to end on asm_copy: a dripping server
kept a run inside its first call past ``timeout_s`` and ``wall_seconds``; tool
arguments nested 100,000 deep ended the search with a traceback; negative usage
let a $0.01 budget make 21 calls; huge answers grew the archive by 123 MB in 31
calls. Each search here exits 0 in bounded time, its archive says why it
stopped, and what it recorded is bounded. The candidates are scored by the engine's
instruction-count evaluator: K0's judgement takes milliseconds, not the emulator's
seconds on a loaded machine, so the wall-clock budget is the LLM's to spend.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anthropic  # noqa: F401  (imported first: an SDK's first import would take a
import openai  # noqa: F401     second or two of a run's small wall-clock budget)
import pytest

from asmevo.operators.llm.replay import ReplayServer
from tests.hostile import checked, toml_text
from tests.operators.llm.conftest import ASM_COPY, GOOD, tool_answer


def write_config(path: Path, base_url: str, *, llm: dict | None = None,
                 budget: dict | None = None, generations: int = 3,
                 chat_completions: bool = False) -> Path:
    """A search on asm_copy whose only operator is llm_mutate, against ``base_url``."""
    doc = {"run": {"name": "hostile-llm", "seed": 1, "spec": str(ASM_COPY), "size": "small",
                   "evaluator": "instruction-count"},
           "engine": {"islands": 1, "population": 3, "generations": generations,
                      "tournament": 2, "elite": 1},
           "operators": {"llm_mutate": {"weight": 1.0, "base_url": base_url,
                                        "backoff_base_s": 0.001, "backoff_max_s": 0.01,
                                        **(llm or {})}},
           "budget": budget or {}}
    if chat_completions:
        doc["llm"] = {"provider": "openai", "model": "local-coder", "api_key_env": "",
                      "prices": {"local-coder": {"input": 3, "output": 15}}}
    path.write_text(toml_text(doc))
    return path


def run(tmp_path: Path, cfg: Path, seconds: float = 60.0):
    t0 = time.monotonic()
    checked(["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--quiet"], seconds=seconds)
    return time.monotonic() - t0, sqlite3.connect(str(tmp_path / "run" / "archive.db"))


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    servers = []

    def start(script) -> ReplayServer:
        servers.append(ReplayServer(script).start())
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def test_a_dripping_server_cannot_hold_a_run_past_its_wall_seconds(server, tmp_path):
    """The issue's case: timeout_s bounded each read only, and a run with wall_seconds = 20
    was still in its first call at 150 s. Now each attempt ends at timeout_s and the last
    one where the run's budget ends."""
    srv = server([tool_answer(GOOD, drip_s=0.05, repeat=-1)])
    cfg = write_config(tmp_path / "c.toml", srv.base_url, llm={"timeout_s": 0.5},
                       budget={"wall_seconds": 2.0}, generations=1000)
    seconds, db = run(tmp_path, cfg)
    status, reason = db.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert (status, reason) == ("finished", "budget.wall_seconds")
    assert seconds < 2.0 + 1.5, seconds            # the run's start-up and its last commit
    assert db.execute("SELECT COUNT(*) FROM llm_usage").fetchone()[0] == 0
    # the first call is retried after each timeout_s until the run's budget ends inside
    # an attempt
    assert len(srv.received) >= 2, len(srv.received)
    reasons = [r for (r,) in db.execute("SELECT reason FROM proposals")]
    assert any("the run's budget.wall_seconds" in r for r in reasons), reasons


def test_deeply_nested_tool_arguments_do_not_end_the_search(server, tmp_path):
    srv = server([{"kind": "tool_use", "raw": "[" * 100_000 + "]" * 100_000, "repeat": -1}])
    cfg = write_config(tmp_path / "c.toml", srv.base_url + "/v1", chat_completions=True,
                       generations=2)
    _, db = run(tmp_path, cfg)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    rows = db.execute("SELECT status, answer, reason FROM llm_usage").fetchall()
    assert rows and all(s == "no_tool" and a is None and "ASMEVO_MAX_JSON_DEPTH" in r
                        for s, a, r in rows)


def test_negative_usage_spends_a_small_budget_at_once(server, tmp_path):
    srv = server([tool_answer(GOOD, repeat=-1, wire_usage={
        "input_tokens": -10 ** 12, "output_tokens": -10 ** 12,
        "cache_read_input_tokens": -10 ** 12})])
    cfg = write_config(tmp_path / "c.toml", srv.base_url, budget={"llm_dollars": 0.01},
                       generations=5)
    _, db = run(tmp_path, cfg)
    reason = db.execute("SELECT stop_reason FROM runs").fetchone()[0]
    costs = [c for (c,) in db.execute("SELECT cost FROM llm_usage")]
    assert reason == "budget.llm_dollars" and len(srv.received) == 1 and len(costs) == 1
    assert costs[0] > 0.01


def test_huge_answers_leave_the_archive_small(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", "8192")
    srv = server([tool_answer(GOOD, text="w" * 900_000, rationale="r" * 100, repeat=-1)])
    cfg = write_config(tmp_path / "c.toml", srv.base_url, generations=3)
    _, db = run(tmp_path, cfg)
    rows = db.execute("SELECT status, answer, reason FROM llm_usage").fetchall()
    assert len(rows) >= 4 and all(len(a or "") < 8192 for _, a, _ in rows)
    assert all("kept as" in r for _, _, r in rows)
    stored = sum(p.stat().st_size for p in (tmp_path / "run").glob("archive.db*"))
    assert stored < len(rows) * 100_000, stored    # not 900 KB a call
