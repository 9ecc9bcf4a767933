"""End to end: ``llm_agent`` with two models on two islands, learning from the population.

The real engine, evaluator (the CPU emulator) and archive, against the replay server's
``tests/operators/llm/data/asm_copy_population.json`` on the OpenAI-compatible protocol
(two local models, no key; the Anthropic protocol of every piece is in the unit tests).
Generation 0: island 0 stacks two accepted edits in one conversation and tries a
third that fails; island 1 accepts one and tries a failing one on top. Generation 1:
each conversation's first message quotes both islands' improvements with their lines,
and tries again (respaced) a candidate generation 0 tried from its parent: refused
before anything is built. Then a kill right after a generation-1 turn is recorded,
and a resume that pays no call twice.
"""
from __future__ import annotations

import json
import signal
import textwrap

import pytest

from asmevo.operators.llm.replay import CALL_ID_HEADER, ReplayServer
from tests.operators.llm.conftest import DATA, GOOD, LOOP_BODY
from tests.operators.llm.test_agent_e2e import conn_of
from tests.operators.llm.test_resume_llm import (_child, _env, assert_same, content,
                                                kill_in_flight, sent, usage_rows)
from tests.operators.llm.test_search_e2e import run_search, run_section

SCRIPT = DATA / "asm_copy_population.json"
REFUSED = "refused: this run tried the same candidate already (gen 0 island "


def population_config(base_url: str) -> str:
    """Two islands of two, two generations, two local models chosen by weight (seed 1:
    both models are asked; in generation 1 island 0's parent is its stacked child, island
    1's is K0)."""
    return run_section("population-e2e", 1) + textwrap.dedent(f"""\
        [engine]
        islands = 2
        population = 2
        generations = 1
        tournament = 2
        elite = 1
        migration_size = 0
        hall_of_fame = 4

        [operators]
        llm_agent = 1.0

        [budget]
        evaluations = 30

        [llm]
        provider = "openai"
        api_key_env = ""
        base_url = "{base_url}/v1"
        backoff_base_s = 0.001
        timeout_s = 30.0
        ensemble = "weights"
        [[llm.models]]
        model = "good-coder"
        [[llm.models]]
        model = "other-coder"
        [llm.prices.good-coder]
        input = 1.0
        output = 4.0
        [llm.prices.other-coder]
        input = 0.5
        output = 2.0
        """)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run (in this process): its directory, requests and content."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    mp.delenv("OPENAI_API_KEY", raising=False)
    try:
        with ReplayServer(json.loads(SCRIPT.read_text())) as srv:
            run_dir = tmp_path_factory.mktemp("population") / "run"
            run_id = run_search(population_config(srv.base_url), run_dir)
            received = list(srv.received)
            calls = sent(srv)
    finally:
        mp.undo()
    got = content(run_dir)
    assert len(got["llm_usage"]) == len(calls) and set(calls.values()) == {1}
    return {"dir": run_dir, "run_id": run_id, "received": received, "content": got,
            "calls": calls, "env": _env(tmp_path_factory),
            "total": sum(r["cost"] for r in got["llm_usage"])}


def _rows(run_dir, sql: str, *args) -> list[dict]:
    return [dict(r) for r in conn_of(run_dir).execute(sql, args)]


def test_a_stacked_conversation_in_the_engine(reference):
    run_dir = reference["dir"]
    tries = _rows(run_dir, "SELECT * FROM agent_tries WHERE generation = 0 "
                           "ORDER BY island, seq")
    assert [(t["island"], t["status"]) for t in tries] == [
        (0, "equal"), (0, "equal"), (0, "mismatch"), (1, "equal"), (1, "mismatch")]
    # each try on island 0 went on top of the accepted ones: 1, 2, 3 edits from K0
    assert [len(json.loads(t["edit"])) if t["edit"].startswith("[") else 1
            for t in tries[:3]] == [1, 2, 3]
    assert tries[1]["speedup"] > tries[0]["speedup"] > 1.0
    child = _rows(run_dir, "SELECT * FROM individuals WHERE ind_id = '0-0-1'")[0]
    edits = json.loads(child["edits"])
    assert [e["lines"] for e in edits] == [GOOD, []] and child["eval_key"] == tries[1]["eval_key"]
    spent = json.loads(_rows(run_dir, "SELECT state FROM checkpoints WHERE generation = 0")[0]
                       ["state"])["spent"]
    assert spent["evaluations"] == 6          # K0 and five tries; the children were tries


def test_generation_1_prompts_quote_both_islands(reference):
    later = [r.raw.replace("\\n", "\n") for r in reference["received"]
             if "K0 plus" in r.raw and "What worked" in r.raw]
    assert len(later) >= 2
    for text in later:
        assert "island 0, gen 0 (llm_agent): 1.0" in text and "island 1, gen 0 (llm_agent)" in text
        assert "[12, 19) of `asm_copy`: 7 -> 4 lines" in text and "[9, 10) of `asm_copy`: 1 -> 0" \
            in text and "[24, 26) of `asm_copy`: 2 -> 1 lines\nbefore:\n  s_waitcnt vmcnt(0)\n  " \
            "s_endpgm\nafter:\n  s_endpgm" in text


def test_duplicates_are_never_verified(reference):
    run_dir = reference["dir"]
    refused = [r.raw for r in reference["received"] if REFUSED in r.raw]
    assert len(refused) == 2                  # one a conversation, on both islands
    # on the stacked child: the failing third try of island 0's stack, respaced; on K0:
    # island 0's first try
    assert "island 0 slot 1 (llm_agent try 3): mismatch)" in refused[0]
    assert "island 0 slot 1 (llm_agent try 1): equal)" in refused[1]
    assert _rows(run_dir, "SELECT * FROM evaluations WHERE generation = 1") == []
    assert _rows(run_dir, "SELECT * FROM agent_tries WHERE generation = 1") == []
    states = [json.loads(r["state"])["spent"]["evaluations"] for r in _rows(
        run_dir, "SELECT state FROM checkpoints ORDER BY generation")]
    assert states == [6, 6]


def test_what_each_model_earned(reference, capsys):
    from asmevo.archive.store import Archive
    from asmevo.cli import main
    run_dir, run_id = reference["dir"], reference["run_id"]
    usage = _rows(run_dir, "SELECT model, generation, island, slot, cost FROM llm_usage")
    with Archive(run_dir / "archive.db", readonly=True) as a:
        records = {r["model"]: r for r in a.model_records(run_id)}
        before_1 = {r["model"]: r for r in a.model_records(run_id, 1)}
    assert set(records) == {u["model"] for u in usage}
    for model, r in records.items():
        mine = [u for u in usage if u["model"] == model]
        assert r["calls"] == len(mine) and r["cost"] == pytest.approx(sum(u["cost"] for u in mine))
        assert r["proposals"] == len({(u["generation"], u["island"], u["slot"]) for u in mine})
    # the two improvements of generation 0, whichever model made them
    assert sum(r["improvements"] for r in records.values()) == 2
    assert sum(r["improvements"] for r in before_1.values()) == 2
    assert sum(r["proposals"] for r in before_1.values()) == 2
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "LLM models (what each model earned)" in out and "improvements_per_dollar" in out


def test_kill_after_a_generation_1_turn_then_resume(reference, tmp_path):
    """SIGKILL right after the first refused duplicate's turn is recorded; the resumed run
    reads every recorded turn back (the refusal comes again from the committed
    generation), sends only what was never answered, and ends equal to the reference."""
    turns = sorted((r["island"], r["turn"], r["call_id"]) for r in reference["content"]
                   ["llm_usage"] if r["generation"] == 1)
    target = turns[0][2]
    run_dir = tmp_path / "run"
    with ReplayServer(json.loads(SCRIPT.read_text())) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(population_config(srv.base_url))
        killed = _child(reference["env"], "run", cfg, run_dir, target, check=False)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        before = sent(srv)
        _child(reference["env"], "resume", run_dir)
        after = sent(srv)
    assert before[target] == 1 and all(n == 1 for n in after.values()), after
    assert_resumed(run_dir, after, reference)


def assert_resumed(run_dir, after, reference) -> None:
    """Every call recorded and charged once; the archive the reference's."""
    assert set(after) == set(reference["calls"])
    rows = usage_rows(run_dir)
    assert sorted(r["call_id"] for r in rows) == sorted(reference["calls"])
    assert sum(r["cost"] for r in rows) == pytest.approx(reference["total"])
    assert_same(content(run_dir), reference["content"])


def test_kill_while_a_stacked_turn_is_in_flight(reference, tmp_path):
    """SIGKILL while island 0's second turn (the try on top of its accepted edit) waits for
    its answer: on resume turn 0 is read back and its try, accepted again from the verdict
    cache, rebuilds the stack; only the unanswered turn is sent again."""
    doc = json.loads(SCRIPT.read_text())
    doc["exchanges"][1]["delay_s"] = 120
    run_dir = tmp_path / "run"
    with ReplayServer(doc) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(population_config(srv.base_url))
        kill_in_flight(srv, reference["env"], cfg, run_dir, 1)
        lost = next(r.headers[CALL_ID_HEADER] for r in srv.received
                    if r.answered_with == "1:tool_use")
        assert lost not in {r["call_id"] for r in usage_rows(run_dir)}
        _child(reference["env"], "resume", run_dir)
        after = sent(srv)
    assert after[lost] == 2 and all(n == 1 for c, n in after.items() if c != lost), after
    assert_resumed(run_dir, after, reference)


def test_an_archive_of_earlier_runs_joins_the_inspirations(reference, tmp_path):
    """``[run] knowledge``: the reference run seen from a run on another K0 (the same
    target): its improvements, their lines before read from its own K0 blob."""
    from asmevo.archive.store import Archive
    from asmevo.engine.config import ConfigError, parse_config
    from asmevo.engine.engine import ProgramCache
    from asmevo.engine.inspirations import Inspirations, knowledge
    found = knowledge((reference["dir"],), target="amdgpu", k0_sha256="0" * 64,
                      programs_for=lambda path: ProgramCache(path).get)
    assert [f.source for f in found] == ["run population-e2e (kernel asm_copy)"] * 2
    assert knowledge((reference["dir"],), target="amdgpu", programs_for=None,
                     k0_sha256=reference["content"]["runs"][0]["k0_sha256"]) == []
    assert knowledge((reference["dir"],), target="nvidia", k0_sha256="0" * 64,
                     programs_for=None) == []
    with Archive(reference["dir"] / "archive.db", readonly=True) as a:
        ask = Inspirations(a, reference["run_id"], lambda e: None,
                           knowledge_of=lambda: found).for_generation(0)
        (only,) = ask(3, 1)                  # generation 0 of this run: nothing of its own
    # the higher gain of the two: island 0's stack, both its windows with their lines
    assert only.island == -1 and only.source.startswith("run population-e2e")
    assert [(c.before, c.after) for c in only.changes] == [(tuple(LOOP_BODY), tuple(GOOD)),
                                                           (("s_nop 1",), ())]
    text = population_config("http://127.0.0.1:1").replace(
        '[engine]', f'knowledge = ["{reference["dir"]}"]\n\n[engine]')
    assert parse_config(text, base_dir=tmp_path).run.knowledge == (reference["dir"],)
    with pytest.raises(ConfigError, match=r"run.knowledge\[0\]: no run archive"):
        parse_config(text.replace(str(reference["dir"]), str(tmp_path)), base_dir=tmp_path)
