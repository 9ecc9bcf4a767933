"""Fixtures for the LLM operators: a replay server, a K0, a context, a ledger.

No test here reaches the internet: every client points at a ReplayServer on
127.0.0.1 and the API key is a dummy that must never show up anywhere.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from asmevo.operators.llm.client import LLMClient
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.replay import ReplayServer
from asmevo.operators.llm.spend import MemoryLedger
from asmevo.engine.individual import Individual
from asmevo.operator import OperatorContext

ROOT = Path(__file__).resolve().parents[3]
K0 = Individual("k0")            # the individual an operator is handed first: K0, no edits
DATA = Path(__file__).resolve().parent / "data"
ASM_COPY = ROOT / "experiments" / "kernels" / "asm_copy"
SOFTMAX = ROOT / "experiments" / "kernels" / "softmax" / "softmax.gfx942.co"
FAKE_KEY = "sk-ant-test-DO-NOT-LEAK-0123456789abcdef"

# the loop body of asm_copy: [12, 19) of K0
LOOP_BODY = ["v_lshlrev_b32_e32 v2, 2, v1", "v_mov_b32_e32 v3, 0",
             "v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]", "v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]",
             "global_load_dword v8, v[4:5], off", "s_waitcnt vmcnt(0)",
             "global_store_dword v[6:7], v8, off"]
GOOD = ["v_lshlrev_b32_e32 v2, 2, v1", "global_load_dword v8, v2, s[4:5]", "s_waitcnt vmcnt(0)",
        "global_store_dword v2, v8, s[6:7]"]


@pytest.fixture(scope="session")
def asm_copy_k0():
    from asmevo.targets.amdgpu import load, recover
    path = ASM_COPY / "asm_copy.gfx942.co"
    return recover(load(path.read_bytes(), path=str(path)))


@pytest.fixture
def fake_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def replay():
    servers = []

    def start(script) -> ReplayServer:
        srv = ReplayServer(script).start()
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.stop()


def config_for(srv: ReplayServer, **kw) -> LLMConfig:
    base = dict(base_url=srv.base_url, backoff_base_s=0.001, backoff_max_s=0.01, max_retries=3,
                timeout_s=5.0)
    base.update(kw)
    return LLMConfig(**base)


@pytest.fixture
def make_op(fake_key, sleeps):
    """An operator by name wired to a replay server (sleep recorded, not slept)."""
    from asmevo.operator import get_operator

    def make(name: str, srv: ReplayServer, **kw):
        cfg = config_for(srv, **kw)
        client = LLMClient(cfg, sleep=sleeps.append)
        return get_operator(name, llm=cfg, client=client)

    return make


def make_context(k0, *, window=(12, 19), notebook=(), ledger=None, slot=0, kernel="asm_copy",
                 program_of=None, **kw) -> OperatorContext:
    from asmevo.targets.amdgpu.edits import apply_edits
    return OperatorContext(
        k0=k0, kernel=kernel, rng=random.Random(slot),
        program_of=program_of or (lambda ind: apply_edits(k0, ind.edits) if ind.edits else k0),
        windows_of=lambda ind: [(kernel, *window)] if window else [],
        notebook=tuple(notebook), spend=ledger if ledger is not None else MemoryLedger(),
        where={"run_id": "test", "generation": 1, "island": 0, "slot": slot}, **kw)


def protocol(srv: ReplayServer, provider: str) -> dict:
    """Operator settings that speak ``provider``'s protocol to ``srv``: Anthropic (the
    default, with the dummy key), or OpenAI chat completions to a local, key-less,
    free model."""
    if provider == "anthropic":
        return {}
    from asmevo.operators.llm.pricing import Price
    return dict(provider="openai", base_url=srv.base_url + "/v1", model="m", api_key_env="",
                prices=(("m", Price(0.0, 0.0, 0.0, 0.0)),))


def tool_answer(lines, rationale="why", **extra) -> dict:
    return {"kind": "tool_use", "input": {"replacement": list(lines), "rationale": rationale},
            **extra}
