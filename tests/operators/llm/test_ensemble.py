"""Several models behind one operator: ``[[llm.models]]``, weights, and the bandit over
accepted improvements per dollar, against both protocols of the replay server."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from asmevo.operator import ModelRecord, Rejected, get_operator
from asmevo.operators.llm.client import LLMClient
from asmevo.operators.llm.config import LLMConfig, Member
from asmevo.operators.llm.ensemble import choose
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.spend import MemoryLedger
from tests.operators.llm.conftest import GOOD, K0, ROOT, make_context, tool_answer
from tests.operators.llm.test_agent import WRONG

PRICES = {"good-coder": {"input": 1.0, "output": 4.0}, "poor-coder": {"input": 1.0, "output": 4.0}}


def two_models(srv, provider: str, ensemble: str) -> dict:
    url = srv.base_url + ("/v1" if provider == "openai" else "")
    return {"provider": provider, "base_url": url, "api_key_env": "" if provider == "openai"
            else "ANTHROPIC_API_KEY", "ensemble": ensemble, "prices": PRICES,
            "backoff_base_s": 0.001, "max_retries": 1, "timeout_s": 5.0,
            "models": [{"model": "good-coder"}, {"model": "poor-coder", "weight": 1.0}]}


def test_models_inherit_the_shared_settings_and_keep_their_own():
    cfg = LLMConfig.from_table({
        "provider": "openai", "api_key_env": "", "base_url": "http://127.0.0.1:8000/v1",
        "max_tokens": 1000, "ensemble": "bandit", "prices": PRICES,
        "models": [{"model": "good-coder", "base_url": "http://127.0.0.1:8001/v1", "weight": 2},
                   {"model": "poor-coder", "max_tokens": 500}]})
    (a, b) = cfg.members
    assert cfg.model == "good-coder" and a.weight == 2.0 and b.weight == 1.0
    assert (a.config.base_url, a.config.max_tokens) == ("http://127.0.0.1:8001/v1", 1000)
    assert (b.config.base_url, b.config.max_tokens) == ("http://127.0.0.1:8000/v1", 500)
    assert LLMConfig().members == (Member(LLMConfig(), 1.0),)


@pytest.mark.parametrize("models, error", [
    ([{"model": "good-coder"}, {"model": "good-coder"}], "named twice"),
    ([{"model": "good-coder", "modle": 1}], "unknown or shared-only key 'modle'"),
    ([{"model": "good-coder", "prices": {}}], "shared-only key 'prices'"),
    ([{"weight": 1}], "missing 'model'"),
    ([{"model": "nobody"}], "no price for model 'nobody'"),
    ([{"model": "good-coder", "weight": 0}], "every weight is 0"),
    ([], "non-empty list"),
])
def test_bad_ensembles_are_refused(models, error):
    with pytest.raises(LLMError, match=error):
        LLMConfig.from_table({"prices": PRICES, "models": models})


def test_the_readme_config_with_two_local_models(tmp_path):
    """The README's LLM section: one config, two local models; it parses, and each model
    keeps its own server and settings."""
    from asmevo.engine.config import parse_config
    from tests.operators.llm.test_search_e2e import run_section
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("**Two local models**"):]
    toml = block[block.index("```toml\n") + 8:block.index("```\n", block.index("```toml"))]
    cfg = parse_config(run_section("two-models", 1) + toml, base_dir=tmp_path)
    op = get_operator("llm_agent", **dict(cfg.operators[0].params))
    assert op.config.ensemble == "bandit"
    assert [(m.config.model, m.config.base_url, m.config.max_tokens, m.config.price.input)
            for m in op.config.members] == [
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "http://127.0.0.1:8000/v1", 2048, 0.0),
        ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "http://127.0.0.1:8001/v1", 4096, 0.0)]


def test_weights_and_the_bandit_per_dollar():
    members = (Member(LLMConfig(model="claude-haiku-4-5"), 3.0),
               Member(LLMConfig(model="claude-sonnet-4-6"), 1.0),
               Member(LLMConfig(model="claude-opus-4-5"), 0.0))
    rng = random.Random(0)
    picks = Counter(choose(members, "weights", rng, {}) for _ in range(400))
    assert picks[2] == 0 and 2.3 < picks[0] / picks[1] < 4.0
    # both earn one improvement in two proposals; sonnet's cost ten times haiku's
    records = {"claude-haiku-4-5": ModelRecord(20, 0.2, 10),
               "claude-sonnet-4-6": ModelRecord(20, 2.0, 10)}
    picks = Counter(choose(members[:2], "bandit", rng, records) for _ in range(200))
    assert picks[0] > 180
    assert choose(members[:1], "bandit", rng, records) == 0      # one model: nothing drawn


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_bandit_shifts_to_the_model_that_earns_more(replay, fake_key, asm_copy_k0,
                                                        provider):
    """30 proposals, the engine's records after each one (what the archive would give
    the next generation): good-coder's edits are improvements, poor-coder's fail."""
    srv = replay([tool_answer(GOOD, repeat=-1, match={"model": "good-coder"}),
                  tool_answer(WRONG, repeat=-1, match={"model": "poor-coder"})])
    op = get_operator("llm_mutate", llm=two_models(srv, provider, "bandit"),
                      client_for=lambda cfg: LLMClient(cfg, sleep=lambda s: None))
    ledger = MemoryLedger()
    records: dict[str, ModelRecord] = {}
    asked = []
    for slot in range(30):
        ctx = make_context(asm_copy_k0, ledger=ledger, slot=slot,
                           model_records=lambda name, r=dict(records): r)
        edit = op.mutate(K0, ctx)
        model = ledger.rows[list(ledger.rows)[-1]]["model"]
        won = not isinstance(edit, Rejected) and list(edit.lines) == GOOD
        assert won == (model == "good-coder")
        r = records.get(model, ModelRecord())
        cost = ledger.rows[list(ledger.rows)[-1]]["cost"]
        records[model] = ModelRecord(r.proposals + 1, r.cost + cost, r.improvements + won)
        asked.append(model)
    assert {"good-coder", "poor-coder"} <= set(asked[:10])      # both tried
    assert Counter(asked[-15:])["good-coder"] >= 13, asked
    assert {r.body["model"] for r in srv.received} == {"good-coder", "poor-coder"}


def test_a_resumed_proposal_asks_the_same_model(replay, fake_key, asm_copy_k0):
    srv = replay([tool_answer(GOOD, repeat=-1)])
    op = get_operator("llm_mutate", llm=two_models(srv, "anthropic", "weights"),
                      client_for=lambda cfg: LLMClient(cfg, sleep=lambda s: None))
    ledger = MemoryLedger()
    for slot in range(6):
        op.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=slot))
    first = {r["call_id"]: r["model"] for r in ledger.rows.values()}
    calls = len(srv.received)
    for slot in range(6):        # the same proposals again: read back, nothing sent
        op.mutate(K0, make_context(asm_copy_k0, ledger=ledger, slot=slot))
    assert len(srv.received) == calls == 6 and len(set(first.values())) == 2
    assert [r.body["model"] for r in srv.received] == list(first.values())
