"""Kill an ``llm_agent`` search (SIGKILL) in the middle of a conversation, resume, compare.

The search of ``test_agent_e2e`` runs in a child process (the child of
``test_resume_llm``: ``python -m tests.operators.llm.test_resume_llm run CONFIG RUN_DIR
[CALL_ID]``) against a replay server in this process, which sees every turn's
call id in the ``x-asmevo-call-id`` header.

* **in flight**: the server holds turn 2's answer (the good try); the child is
  killed while it waits. Turns 0 and 1 were recorded and the wrong try's
  evaluation stored. On resume turns 0 and 1 are read back from the archive (not
  sent), their tools run again (the wrong try comes back from the verdict cache),
  and only turn 2 is sent again (it was never paid for); then the conversation
  goes on.
* **recorded**: the child kills itself right after a turn's usage row is
  committed (turn 2, before its try ran; turn 3, the submit, before the
  generation committed). On resume nothing already recorded is sent again.

Either way every call is recorded and charged once, and the archive ends equal,
by content, to the uninterrupted run's: individuals, proposals, verdicts, the
agent's tries, checkpoints (evaluations counted and dollars spent), blobs, the
usage rows (turns included) and the stored prompts.
"""
from __future__ import annotations

import json
import signal

import pytest

from asmevo.operators.llm.replay import CALL_ID_HEADER, ReplayServer
from tests.operators.llm.test_agent_e2e import SCRIPT, agent_config
from tests.operators.llm.test_resume_llm import (_child, _env, assert_same, content, kill_in_flight,
                                       sent, usage_rows)

GOOD_TRY = 2          # the exchange that answers turn 2 (try_edit of the good edit)


def script(delayed: int | None = None) -> dict:
    doc = json.loads(SCRIPT.read_text())
    if delayed is not None:
        doc["exchanges"][delayed]["delay_s"] = 120
    return doc


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("agent_reference")
    env = _env(tmp_path_factory)
    with ReplayServer(script()) as srv:
        cfg = base / "c.toml"
        cfg.write_text(agent_config(srv.base_url))
        _child(env, "run", cfg, base / "run")
        calls = sent(srv)
    got = content(base / "run")
    assert len(got["llm_usage"]) == len(calls) == 5 and set(calls.values()) == {1}
    assert [t["status"] for t in got["agent_tries"]] == ["mismatch", "equal"]
    turns = {(r["generation"], r["turn"]): r["call_id"] for r in got["llm_usage"]}
    return {"content": got, "env": env, "calls": calls, "turns": turns,
            "total": sum(r["cost"] for r in got["llm_usage"])}


def assert_charged_once(run_dir, reference) -> None:
    rows = usage_rows(run_dir)
    ids = [r["call_id"] for r in rows]
    assert sorted(ids) == sorted(reference["calls"])          # each recorded exactly once
    assert sum(r["cost"] for r in rows) == pytest.approx(reference["total"])


def test_kill_while_a_turn_is_in_flight(reference, tmp_path):
    run_dir = tmp_path / "run"
    with ReplayServer(script(GOOD_TRY)) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(agent_config(srv.base_url))
        kill_in_flight(srv, reference["env"], cfg, run_dir, GOOD_TRY)
        lost = reference["turns"][(0, 2)]
        before = sent(srv)
        assert before[lost] == 1 and lost not in {r["call_id"] for r in usage_rows(run_dir)}
        # the wrong try's evaluation survived the kill: it will be served, not run again
        assert [t for t in usage_rows(run_dir)] and len(before) == 3
        _child(reference["env"], "resume", run_dir)
        after = sent(srv)
    assert after[lost] == 2                                   # the unpaid turn, sent again
    assert all(n == 1 for c, n in after.items() if c != lost), after
    assert set(after) == set(reference["calls"])
    assert_charged_once(run_dir, reference)
    assert_same(content(run_dir), reference["content"])


@pytest.mark.parametrize("turn", [2, 3], ids=["before-the-good-try", "after-submit"])
def test_kill_right_after_a_turn_is_recorded(reference, tmp_path, turn):
    target = reference["turns"][(0, turn)]
    run_dir = tmp_path / "run"
    with ReplayServer(script()) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(agent_config(srv.base_url))
        killed = _child(reference["env"], "run", cfg, run_dir, target, check=False)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert f"killing after {target}" in killed.stdout
        before = sent(srv)
        _child(reference["env"], "resume", run_dir)
        after = sent(srv)
    assert before[target] == 1 and all(n == 1 for n in after.values()), after
    assert set(after) == set(reference["calls"])
    assert_charged_once(run_dir, reference)
    assert_same(content(run_dir), reference["content"])
    assert CALL_ID_HEADER      # the header the counts above are keyed on
