"""Kill a real LLM search (SIGKILL) around an LLM call, resume it, compare.

The search of ``test_search_e2e`` (asm_copy, the LLM operators, the real
evaluator on the emulator) runs in a child process against a replay server in
this process; the client sends each call's id in the ``x-asmevo-call-id``
header, so the server sees which call every request belongs to.

* **in flight**: the server holds one answer (``delay_s``); as soon as it has
  received that request the child is killed. Nothing was recorded for the
  call, so the resumed run sends it again (same call id) and records it once.
* **recorded**: the child kills itself right after the archive committed a
  call's usage row, before the generation's individuals and checkpoint. The
  resumed run reuses the stored answer: that call id never reaches the server
  again, and is charged once.

Either way the archive ends equal, by content, to an uninterrupted run's with
the same seed: individuals, proposals, verdicts, checkpoints (spend included),
blobs, the usage rows and the stored prompts.

The child: ``python -m tests.operators.llm.test_resume_llm run CONFIG RUN_DIR [CALL_ID]``
or ``... resume RUN_DIR``; with CALL_ID it SIGKILLs itself once that call's row
is committed.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from asmevo.operators.llm.replay import CALL_ID_HEADER, ReplayServer
from tests.engine.helpers import ROOT, archive_content
from tests.operators.llm.test_search_e2e import SCRIPT, search_config

HOSTILE, REPAIR = 2, 3        # exchanges of asm_copy_e2e.json
GENERATIONS = 2               # 0, 1, 2: the wrong edit in 0, its repair in 1 (seed 4)


def script(delayed: int | None = None) -> dict:
    doc = json.loads(SCRIPT.read_text())
    if delayed is not None:
        doc["exchanges"][delayed]["delay_s"] = 120
    return doc


def _env(tmp_path_factory) -> dict:
    return os.environ | {"PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "dummy",
                         "ASMEVO_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}


def _cmd(*args) -> list[str]:
    return [sys.executable, "-m", "tests.operators.llm.test_resume_llm", *map(str, args)]


def _child(env, *args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(_cmd(*args), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def content(run_dir: Path) -> dict:
    """``archive_content`` plus the LLM tables (without row ids and timestamps)."""
    out = archive_content(run_dir)
    conn = sqlite3.connect(str(run_dir / "archive.db"))
    conn.row_factory = sqlite3.Row
    out["llm_usage"] = [{k: v for k, v in dict(r).items() if k not in ("id", "created", "run_id")}
                        for r in conn.execute("SELECT * FROM llm_usage ORDER BY call_id")]
    out["prompts"] = sorted(tuple(r) for r in conn.execute("SELECT * FROM prompts"))
    conn.close()
    return out


def assert_same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == value, f"archives differ in {key}"


def sent(srv: ReplayServer) -> Counter:
    """How many requests the server received per call id."""
    return Counter(r.headers.get(CALL_ID_HEADER) for r in srv.received)


def usage_rows(run_dir: Path) -> list[dict]:
    conn = sqlite3.connect(str(run_dir / "archive.db"))
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM llm_usage ORDER BY id")]
    conn.close()
    return rows


def assert_charged_once(run_dir: Path, reference: dict) -> None:
    rows = usage_rows(run_dir)
    ids = [r["call_id"] for r in rows]
    assert len(ids) == len(set(ids)), Counter(ids).most_common(3)
    assert set(ids) == {r["call_id"] for r in reference["content"]["llm_usage"]}
    by_id = {r["call_id"]: r["cost"] for r in rows}
    total = sqlite3.connect(str(run_dir / "archive.db")).execute(
        "SELECT SUM(cost) FROM llm_usage").fetchone()[0]
    assert total == pytest.approx(sum(by_id.values()))
    assert total == pytest.approx(reference["total"])
    last = json.loads(sqlite3.connect(str(run_dir / "archive.db")).execute(
        "SELECT state FROM checkpoints ORDER BY generation DESC LIMIT 1").fetchone()[0])
    assert last["spent"]["llm_dollars"] == pytest.approx(reference["total"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run: its archive content and the calls it made."""
    base = tmp_path_factory.mktemp("llm_reference")
    env = _env(tmp_path_factory)
    with ReplayServer(script()) as srv:
        cfg = base / "c.toml"
        cfg.write_text(search_config(srv.base_url, generations=GENERATIONS))
        _child(env, "run", cfg, base / "run")
        calls = sent(srv)
    got = content(base / "run")
    assert len(got["llm_usage"]) == len(calls) >= 5 and set(calls.values()) == {1}
    # the story the kill points rely on (seed 4): good, wrong, hostile in gen 0, repair in 1
    story = [(r["generation"], r["operator"], r["status"]) for r in got["llm_usage"]]
    assert sorted(story)[:3] == [(0, "llm_mutate", "proposed"), (0, "llm_mutate", "proposed"),
                                 (0, "llm_mutate", "rejected")]
    assert (1, "llm_repair", "proposed") in story and (1, "llm_mutate", "no_tool") in story
    return {"content": got, "env": env, "calls": calls,
            "total": sum(r["cost"] for r in got["llm_usage"]),
            "usage": sorted(got["llm_usage"], key=lambda r: (r["generation"], r["slot"]))}


def kill_in_flight(srv: ReplayServer, env: dict, cfg: Path, run_dir: Path, delayed: int) -> None:
    """Run the child and SIGKILL it while the server holds exchange ``delayed``'s answer."""
    proc = subprocess.Popen(_cmd("run", cfg, run_dir), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while not any(r.answered_with == f"{delayed}:tool_use" for r in srv.received):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the delayed request never arrived"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)      # the answer is still being held
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("delayed", [HOSTILE, REPAIR], ids=["gen0-after-2-calls", "gen1-repair"])
def test_kill_while_a_call_is_in_flight(reference, tmp_path, delayed):
    run_dir = tmp_path / "run"
    with ReplayServer(script(delayed)) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(search_config(srv.base_url, generations=GENERATIONS))
        kill_in_flight(srv, reference["env"], cfg, run_dir, delayed)
        lost = next(r for r in srv.received if r.answered_with == f"{delayed}:tool_use")
        cid = lost.headers[CALL_ID_HEADER]
        assert cid not in {r["call_id"] for r in usage_rows(run_dir)}   # nothing recorded
        before = sent(srv)

        _child(reference["env"], "resume", run_dir)
        after = sent(srv)

    # the lost call was sent once more (same id, same answer); recorded ones were not
    assert after[cid] == 2 and before[cid] == 1
    assert all(n == 1 for c, n in after.items() if c != cid), after
    assert set(after) == set(reference["calls"])
    assert_charged_once(run_dir, reference)
    assert_same(content(run_dir), reference["content"])


def _pick(reference, status: str, generation: int) -> str:
    rows = [r for r in reference["usage"]
            if r["status"] == status and r["generation"] == generation]
    assert rows, (status, generation, reference["usage"])
    return rows[0]["call_id"]


@pytest.mark.parametrize("which", [("rejected", 0), ("no_tool", 1), ("proposed", 1)],
                         ids=["refused-answer-gen0", "text-only-answer", "repair-gen1"])
def test_kill_right_after_the_usage_row_is_committed(reference, tmp_path, which):
    """The refused (.incbin) and text-only answers are reused as the same refusal; the
    repair's stored answer is parsed again into the same edit."""
    target = _pick(reference, *which)
    run_dir = tmp_path / "run"
    with ReplayServer(script()) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(search_config(srv.base_url, generations=GENERATIONS))
        killed = _child(reference["env"], "run", cfg, run_dir, target, check=False)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert f"killing after {target}" in killed.stdout
        assert target in {r["call_id"] for r in usage_rows(run_dir)}
        before = sent(srv)
        _child(reference["env"], "resume", run_dir)
        after = sent(srv)

    assert before[target] == 1 and after[target] == 1    # reused, not sent again
    assert all(n == 1 for n in after.values()), after
    assert set(after) == set(reference["calls"])
    assert_charged_once(run_dir, reference)
    assert_same(content(run_dir), reference["content"])


# -- the child process ---------------------------------------------------------------------

def main(argv: list[str]) -> int:
    from asmevo.engine.config import load_config
    from asmevo.engine.rundir import create_run, open_run
    from tests.operators.llm.test_search_e2e import pinned_engine

    mode, *rest = argv
    if mode == "run":
        config, run_dir, *kill = rest
        run = create_run(load_config(config), run_dir)
    else:
        run_dir, *kill = rest
        run = open_run(run_dir)
    engine = pinned_engine(run)
    engine.load_state()
    if kill:
        spend, record = engine.spend, engine.spend.record

        def record_then_die(call, where):
            record(call, where)                  # committed by the archive at once
            if call.call_id == kill[0]:
                print(f"killing after {call.call_id}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        spend.record = record_then_die
    engine.run()
    engine.pool.close()
    run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
