"""LLM runs fail fast: the pre-flight, a run whose every proposal fails, ``-v``, host names.

The issue's case: with no key or a dead endpoint, ``asmevo run`` spent its wall budget
on retries, showed nothing and exited 0. Each search here is ``asmevo run`` in this
process against the replay server (or a closed port), scored by the instruction-count
evaluator so that only the LLM's part takes time; the assertions are what a user sees
(exit code, the stderr line, the stdout lines) and what the archive keeps.
"""
from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path

import anthropic  # noqa: F401  (imported before any timed run: the SDK's first import
import openai  # noqa: F401     takes a second or two)
import pytest

from asmevo.operators.llm.replay import ReplayServer
from tests.hostile import checked, run_cli, toml_text
from tests.operators.llm.conftest import ASM_COPY, FAKE_KEY, GOOD, tool_answer

OPENAI = {"provider": "openai", "model": "local-coder", "api_key_env": "",
          "prices": {"local-coder": {"input": 3, "output": 15}}}


def write_config(path: Path, base_url: str, *, llm: dict | None = None, generations: int = 1,
                 population: int = 3) -> Path:
    """A search on asm_copy whose only operator is llm_mutate, against ``base_url``."""
    doc = {"run": {"name": "preflight", "seed": 1, "spec": str(ASM_COPY), "size": "small",
                   "evaluator": "instruction-count"},
           "engine": {"islands": 1, "population": population, "generations": generations,
                      "tournament": 2, "elite": 1},
           "operators": {"llm_mutate": {"weight": 1.0, "base_url": base_url,
                                        "backoff_base_s": 0.001, "backoff_max_s": 0.002}},
           "llm": dict(llm or {})}
    path.write_text(toml_text(doc))
    return path


def run(tmp_path: Path, cfg: Path, *extra: str, seconds: float = 60.0):
    """``asmevo run``: (outcome, elapsed seconds, the archive)."""
    t0 = time.monotonic()
    out = checked(["run", str(cfg), "--run-dir", str(tmp_path / "run"), *extra],
                  seconds=seconds)
    return out, time.monotonic() - t0, sqlite3.connect(str(tmp_path / "run" / "archive.db"))


def refused(out, *texts: str) -> str:
    """The one stderr line of a run refused for its setup; it holds ``texts``."""
    assert out.code == 2, (out.code, out.stderr)
    (line,) = out.error_lines
    assert line.startswith("asmevo run: error: ") and "asmevo resume" in line, line
    assert all(t in line for t in texts), line
    assert FAKE_KEY not in out.stderr + out.stdout
    return line


def nothing_searched(db) -> None:
    status, why = db.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert status == "failed" and why.startswith("pre-flight: llm_mutate: "), (status, why)
    assert db.execute("SELECT COUNT(*) FROM individuals").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 0


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    servers = []

    def start(script, **kw) -> ReplayServer:
        servers.append(ReplayServer(script, **kw).start())
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_dead_endpoint_stops_the_run_before_it_starts(tmp_path, monkeypatch, provider):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    url = f"http://127.0.0.1:{closed_port()}" + ("/v1" if provider == "openai" else "")
    cfg = write_config(tmp_path / "c.toml", url, llm=OPENAI if provider == "openai" else {},
                       generations=50)
    out, seconds, db = run(tmp_path, cfg)
    refused(out, "pre-flight: llm_mutate: ", f"at {url}: ", "Connection refused")
    assert seconds < 10, seconds           # not 50 generations of retries
    nothing_searched(db)


@pytest.mark.parametrize("key, texts", [
    ("wrong", ("HTTP 401: invalid x-api-key", "claude-sonnet-4-6 at http://127.0.0.1:")),
    (None, ("set ANTHROPIC_API_KEY in the environment",)),
])
def test_a_refused_or_missing_key_stops_the_run(server, tmp_path, monkeypatch, key, texts):
    srv = server([tool_answer(GOOD, repeat=-1)], api_key=FAKE_KEY)
    if key is None:
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    out, _, db = run(tmp_path, write_config(tmp_path / "c.toml", srv.base_url))
    refused(out, *texts)
    nothing_searched(db)
    if key is None:                        # nothing was sent
        assert srv.received == [] and srv.model_requests == []
    else:   # a key may be refused the models endpoint alone: the one-token call decides
        assert srv.model_requests == ["/v1/models/claude-sonnet-4-6"]
        assert [(r.body["max_tokens"], r.answered_with) for r in srv.received] == \
            [(1, "refused:401")]


@pytest.mark.parametrize("models_api", ["both", "list", "none"])
def test_a_model_the_server_does_not_know_stops_the_run(server, tmp_path, models_api):
    """However the server offers its models (vLLM lists them only; some offer no models
    endpoint), an unknown model ends in the one-token call's 404, before any proposal."""
    srv = server([tool_answer(GOOD, repeat=-1)], models=["other-coder"], models_api=models_api)
    cfg = write_config(tmp_path / "c.toml", srv.base_url + "/v1", llm=OPENAI)
    out, _, db = run(tmp_path, cfg)
    refused(out, "pre-flight: llm_mutate: ", "HTTP 404: model: local-coder",
            f"(local-coder at {srv.base_url}/v1)")
    nothing_searched(db)
    # the one-token call was refused (404 costs nothing) and took no scripted exchange
    assert [r.answered_with for r in srv.received] == ["refused:404"]
    assert srv.received[0].body["max_tokens"] == 1 and "tools" not in srv.received[0].body
    assert srv.unused == []
    assert db.execute("SELECT COUNT(*) FROM llm_usage").fetchone()[0] == 0


def test_where_the_models_endpoint_cannot_tell_a_one_token_call_does_and_is_charged(
        server, tmp_path):
    srv = server([{"kind": "text", "text": "ok", "match": {"contains": ["single word: ok"]},
                   "usage": {"input_tokens": 12, "output_tokens": 1}},
                  tool_answer(GOOD, repeat=-1)], models_api="none")
    out, _, db = run(tmp_path, write_config(tmp_path / "c.toml", srv.base_url))
    assert out.code == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("pre-flight: "))
    assert f"ok (a one-token call, ${(12 * 3 + 15) / 1e6:.5f}" in line, line
    assert "the models endpoint: HTTP 404" in line, line
    rows = db.execute("SELECT operator, status, tokens_in, tokens_out, cost FROM llm_usage "
                      "WHERE operator = 'preflight'").fetchall()
    assert rows == [("preflight", "preflight", 12, 1, pytest.approx((12 * 3 + 15) / 1e6))]
    # the run's spend counts it; the search went on and used the script
    assert db.execute("SELECT COUNT(*) FROM llm_usage").fetchone()[0] > 1
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"


def test_every_proposal_failing_mid_run_stops_it_and_resume_continues(server, tmp_path):
    """The pre-flight passes (the models endpoint knows the model), then every proposal of
    generation 0 is refused (the key was revoked, say): the run stops after committing
    it, with one line, instead of going on; fixed, it resumes."""
    srv = server([{"kind": "error", "status": 403, "message": "key revoked", "repeat": 2},
                  tool_answer(GOOD, repeat=-1)])
    cfg = write_config(tmp_path / "c.toml", srv.base_url, generations=4, population=3)
    out, seconds, db = run(tmp_path, cfg)
    line = refused(out, "generation 0: every llm_mutate proposal failed (2 of 2): ",
                   "HTTP 403: key revoked", f"(claude-sonnet-4-6 at {srv.base_url})")
    assert seconds < 20, seconds
    status, why = db.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert status == "failed" and why in line
    assert [g for (g,) in db.execute("SELECT generation FROM checkpoints")] == [0]
    outcomes = db.execute("SELECT outcome, reason FROM proposals").fetchall()
    assert len(outcomes) == 2 and all(o == "error" and "HTTP 403" in r for o, r in outcomes)
    # the server answers again (the script's refusals are used up): resume checks it
    # first, then goes on from generation 1
    again = checked(["resume", str(tmp_path / "run"), "--quiet"], seconds=60)
    assert again.code == 0, again.stderr
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    assert db.execute("SELECT COUNT(*) FROM proposals WHERE generation > 0 AND outcome = "
                      "'edit'").fetchone()[0] > 0


def test_retries_are_one_line_each_with_v(server, tmp_path):
    srv = server([{"kind": "error", "status": 503, "message": "warming up", "repeat": 2},
                  tool_answer(GOOD, repeat=-1)])
    cfg = write_config(tmp_path / "c.toml", srv.base_url, population=2)
    quiet, _, _ = run(tmp_path / "a", cfg)
    assert quiet.code == 0 and "retrying" not in quiet.stderr, quiet.stderr
    srv2 = server([{"kind": "error", "status": 503, "message": "warming up", "repeat": 2},
                   tool_answer(GOOD, repeat=-1)])
    cfg = write_config(tmp_path / "c2.toml", srv2.base_url, population=2)
    loud, _, _ = run(tmp_path / "b", cfg, "-v")
    assert loud.code == 0, loud.stderr
    retries = [ln for ln in loud.stderr.splitlines() if "retrying in" in ln]
    assert len(retries) == 2, loud.stderr
    for k, ln in enumerate(retries, 1):
        assert ln.startswith("asmevo.llm: llm call ") and \
            f": attempt {k} of 5 failed (HTTP 503: warming up); retrying in 0.00" in ln, ln


@pytest.fixture
def vllm_host(monkeypatch):
    """The name ``vllm`` resolves to this machine (a compose service's name, say): DNS is
    the one edge a test cannot have here."""
    real = socket.getaddrinfo

    def resolve(host, *args, **kw):
        return real("127.0.0.1" if host == "vllm" else host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def test_a_host_name_for_plain_http_where_the_user_allows_it(server, tmp_path, vllm_host):
    srv = server([tool_answer(GOOD, repeat=-1)], models=["local-coder"], models_api="list")
    url = srv.base_url.replace("127.0.0.1", "vllm") + "/v1"
    cfg = write_config(tmp_path / "no.toml", url, llm=OPENAI)
    out = run_cli(["run", str(cfg), "--run-dir", str(tmp_path / "no")])
    assert out.code == 2 and len(out.error_lines) == 1, out.stderr
    assert 'allow_http_hosts = ["vllm"]' in out.stderr and not (tmp_path / "no").exists()
    keyed = write_config(tmp_path / "keyed.toml", url,
                         llm=OPENAI | {"allow_http_hosts": ["vllm"], "api_key_env": "K"})
    out = run_cli(["run", str(keyed), "--run-dir", str(tmp_path / "keyed")])
    assert out.code == 2 and "a key would cross the network in clear text" in out.stderr
    ok = write_config(tmp_path / "ok.toml", url, llm=OPENAI | {"allow_http_hosts": ["vllm"]})
    out, _, db = run(tmp_path, ok)
    assert out.code == 0, out.stderr
    assert any(ln.startswith(f"pre-flight: llm_mutate: local-coder at {url}: ok")
               for ln in out.stdout.splitlines()), out.stdout
    assert srv.received and all(r.headers["host"].startswith("vllm:") for r in srv.received)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
