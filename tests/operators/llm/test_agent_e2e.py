"""End to end: an ``llm_agent`` search on asm_copy, against both protocols of the replay server.

The real engine, the real evaluator (static gate, differential run on the CPU
emulator, modeled timing) and the real archive; the model is the replay
server's script ``tests/operators/llm/data/asm_copy_agent.json``. One conversation on K0's
loop body (the engine's ``windows_of`` pinned to it, as in ``test_search_e2e``)
looks (show, analyze), tries a wrong edit (mismatch, with the first differing
element in the tool result), tries the right one (equal and faster), and
submits it; a second conversation on the same lineage reads both tries in its
first message. The same assertions hold with ``provider = "openai"``.
"""
from __future__ import annotations

import json
import re
import sqlite3
import textwrap
from pathlib import Path

import pytest

from asmevo.operators.llm.replay import ReplayServer
from tests.operators.llm.conftest import DATA, GOOD
from tests.operators.llm.test_search_e2e import run_search, run_section

SCRIPT = DATA / "asm_copy_agent.json"
WRONG_FIRST = "v_lshlrev_b32_e32 v2, 2, v0"


def agent_config(base_url: str, *, provider: str = "anthropic", generations: int = 1,
                 evaluations: int | None = 20, name: str = "agent-e2e") -> str:
    """One island of two: one conversation per generation; ``generations`` + 1 of them."""
    if provider == "openai":
        llm = textwrap.dedent(f"""\
            provider = "openai"
            base_url = "{base_url}/v1"
            model = "replay-coder"
            api_key_env = ""
            [llm.prices.replay-coder]
            input = 1.0
            output = 4.0
            """)
    else:
        llm = f'base_url = "{base_url}"\n'
    budget = "" if evaluations is None else f"evaluations = {evaluations}\n"
    return run_section(name, 3) + textwrap.dedent(f"""\
        [engine]
        islands = 1
        population = 2
        generations = {generations}
        tournament = 2
        elite = 1
        hall_of_fame = 2

        [operators]
        llm_agent = 1.0

        [budget]
        llm_dollars = 2.0
        {budget}
        [llm]
        backoff_base_s = 0.001
        backoff_max_s = 0.01
        timeout_s = 30.0
        """) + llm


def conn_of(run_dir: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(run_dir / "archive.db"))
    conn.row_factory = sqlite3.Row
    return conn


@pytest.fixture(scope="module", params=["anthropic", "openai"])
def searched(request, tmp_path_factory):
    """(run dir, server, run id, provider) of one two-generation agent search."""
    provider = request.param
    mp = pytest.MonkeyPatch()
    mp.setenv("ANTHROPIC_API_KEY", "dummy")
    mp.delenv("OPENAI_API_KEY", raising=False)
    mp.setenv("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    srv = ReplayServer(json.loads(SCRIPT.read_text())).start()
    try:
        run_dir = tmp_path_factory.mktemp(f"agent_{provider}") / "run"
        run_id = run_search(agent_config(srv.base_url, provider=provider), run_dir)
        yield run_dir, srv, run_id, provider
    finally:
        srv.stop()
        mp.undo()


def test_the_protocol_is_the_one_configured(searched):
    _, srv, _, provider = searched
    assert len(srv.received) == 5 and srv.unused == []
    assert len({r.headers["x-asmevo-call-id"] for r in srv.received}) == 5
    if provider == "openai":
        body = srv.received[1].body
        assert body["tool_choice"] == "required"
        assert {t["function"]["name"] for t in body["tools"]} == {
            "show", "analyze", "try_edit", "profile", "next_window", "submit"}
        assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool",
                                                        "tool", "user"]
        assert srv.received[0].headers["x-asmevo-call-id"] and "/v1" not in body["model"]
    else:
        body = srv.received[1].body
        assert body["tool_choice"] == {"type": "any"} and "system" in body
        # cached: both system blocks and the newest block of the transcript
        assert all("cache_control" in b for b in body["system"])
        assert "cache_control" in body["messages"][-1]["content"][-1]


def test_the_rejected_try_comes_back_with_its_details_then_the_good_one_passes(searched):
    _, srv, _, provider = searched
    raws = [r.raw for r in srv.received]
    # turn 2's request holds try 1's tool result: mismatch, the element and its bits
    assert re.search(r"try 1 of 4: \[12, 19\) -> 4 lines\\nverdict: mismatch: output dst\[64\]",
                     raws[2]), raws[2][-2000:]
    assert '\\"index\\": 64' in raws[2] and '\\"buffer\\": \\"dst\\"' in raws[2]
    # turn 3's request: try 2 equal, with its modeled speedup over K0
    m = re.search(r"try 2 of 4: \[12, 19\) -> 4 lines\\nverdict: equal[^\\]*\\nspeedup over "
                  r"K0: ([0-9.]+)x \(modeled\)", raws[3])
    assert m and float(m.group(1)) > 1.0
    # show listed the window with its per-line profile; analyze named live registers
    assert "per-line profile: modeled cycles" in raws[1] and "live out:" in raws[1]


def test_the_engine_archives_every_try_and_returns_the_submitted_one(searched):
    run_dir, _, _, _ = searched
    conn = conn_of(run_dir)
    tries = [dict(r) for r in conn.execute("SELECT * FROM agent_tries ORDER BY generation, seq")]
    assert [(t["generation"], t["seq"], t["status"]) for t in tries] == [
        (0, 0, "mismatch"), (0, 1, "equal")]
    assert all(t["fresh"] == 1 and t["parent"] == "k0" for t in tries)
    assert json.loads(tries[0]["edit"])["lines"][0] == WRONG_FIRST
    for t in tries:           # each try is an archived evaluation of this run
        ev = conn.execute("SELECT status, run_id, generation FROM evaluations WHERE eval_key = ?",
                          (t["eval_key"],)).fetchone()
        assert ev["status"] == t["status"] and ev["generation"] == 0
    child = conn.execute("SELECT * FROM individuals WHERE ind_id = '0-0-1'").fetchone()
    assert child["operator"] == "llm_agent" and child["eval_key"] == tries[1]["eval_key"]
    assert json.loads(child["edits"])[-1]["lines"] == GOOD
    # counted once: K0 and the two tries, the offspring came from the verdict cache
    spent = json.loads(conn.execute("SELECT state FROM checkpoints WHERE generation = 0")
                       .fetchone()[0])["spent"]
    assert spent["evaluations"] == 3 and spent["accepted"] == 2


def test_a_later_conversation_reads_the_lineage_notebook(searched):
    run_dir, srv, _, _ = searched
    later = srv.received[4].raw
    assert "Tried before on this lineage (newest first" in later
    assert "-> mismatch: output dst[64]" in later and re.search(r"-> equal, 1\.\d{3}x", later)
    rows = conn_of(run_dir).execute("SELECT outcome, reason FROM proposals WHERE generation = 1")
    assert [r["outcome"] for r in rows] == ["none"]


def test_every_turn_is_recorded_with_its_turn_and_prompt(searched):
    run_dir, srv, _, _ = searched
    conn = conn_of(run_dir)
    usage = [dict(r) for r in conn.execute("SELECT * FROM llm_usage ORDER BY id")]
    assert [(u["generation"], u["turn"]) for u in usage] == [(0, 0), (0, 1), (0, 2), (0, 3),
                                                             (1, 0)]
    for u, got in zip(usage, srv.received):
        text = conn.execute("SELECT text FROM prompts WHERE prompt_sha256 = ?",
                            (u["prompt_sha256"],)).fetchone()[0]
        assert json.loads(text) == got.body             # the stored request is what was sent
        assert json.loads(u["answer"])["tool_uses"]      # and the answer, for a resume


def test_report_shows_spend_per_conversation_and_per_improvement(searched, capsys):
    run_dir, _, run_id, _ = searched
    from asmevo.archive import queries
    from asmevo.archive.store import Archive
    from asmevo.cli import main
    with Archive(run_dir / "archive.db", readonly=True) as a:
        convs = queries.conversations(a, run_id)
        spend = queries.llm_spend(a, run_id)
        total = a.llm_dollars(run_id)
    assert list(convs["turns"]) == [4, 1] and list(convs["tries"]) == [2, 0]
    assert list(convs["improved"]) == [True, False] and convs["cost"].sum() == \
        pytest.approx(total) and total > 0
    row = spend[spend["operator"] == "llm_agent"].iloc[0]
    assert row["calls"] == 5 and row["improvements"] == 1        # one conversation, not 4 calls
    assert row["cost_per_improvement"] == pytest.approx(total)
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "LLM conversations (spend per conversation)" in out and "cost_per_improvement" in out


def test_a_try_the_evaluation_budget_cannot_pay_is_refused(tmp_path, monkeypatch):
    """Budget 2: K0 and the wrong try use it up; the good try is refused with the reason,
    its submission is left unborn, and the run never counts a third evaluation."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path / "cache"))
    with ReplayServer(json.loads(SCRIPT.read_text())) as srv:
        run_dir = tmp_path / "run"
        run_search(agent_config(srv.base_url, evaluations=2), run_dir)
        assert "not evaluated: budget.evaluations spent" in srv.received[3].raw
    conn = conn_of(run_dir)
    tries = [tuple(r) for r in conn.execute("SELECT seq, status, fresh FROM agent_tries")]
    assert tries == [(0, "mismatch", 1), (1, "refused", 0)]
    state = json.loads(conn.execute("SELECT state FROM checkpoints ORDER BY generation DESC")
                       .fetchone()[0])
    assert state["spent"]["evaluations"] == 2
    assert conn.execute("SELECT outcome FROM proposals").fetchone()[0] == "budget"
    assert conn.execute("SELECT stop_reason FROM runs").fetchone()[0] == "budget.evaluations"
