"""End to end: a short search on asm_copy whose only operators are the LLM ones.

The real engine, the real evaluator (static gate, differential run on the CPU
emulator, modeled timing) and the real archive, against the replay server's
recorded exchanges (``tests/operators/llm/data/asm_copy_e2e.json``): a correct edit of
the loop body (7 -> 4 instructions, bit-equal to K0, faster), a wrong one
(mismatch), a hostile one (``.incbin``, refused before any tool sees it) and,
once the mismatch's verdict is in a prompt, its repair.

Windows, two ways (the same assertions hold for both):

* ``pinned`` (seed 4): the engine's explicit ``windows_of(program, kernel)``
  hook gives only the loop body, so every mutation asks about it;
* ``profiled`` (seed 8): the engine's own windows: each evaluated individual's
  hot windows from the modeled profile (the loop body first, ~82% of the
  cycles), every basic block for an individual not yet evaluated (K0 in
  generation 0); the operator draws one by its share of the modeled time (of the
  three largest blocks, uniformly, where there are no shares).
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from asmevo.operators.llm.replay import ReplayServer
from tests.operators.llm.conftest import ASM_COPY, DATA, GOOD

SCRIPT = DATA / "asm_copy_e2e.json"
K0_LEN = 26           # instructions of recovered asm_copy
LOOP = (12, 19)       # its loop body (one basic block)


def loop_body(program, kernel: str) -> list[tuple[str, int, int]]:
    """The loop body of asm_copy: [12, 19) in K0, [12, 16) once the good edit shrank it."""
    n = len(program.function(kernel).instructions)
    return [(kernel, LOOP[0], LOOP[1] if n == K0_LEN else LOOP[1] - (K0_LEN - n))]


def run_section(name: str, seed: int) -> str:
    """``[run]``: asm_copy, small, verified on the emulator, modeled timing."""
    return textwrap.dedent(f"""\
        [run]
        name = "{name}"
        seed = {seed}
        spec = "{ASM_COPY}"
        size = "small"
        evaluator = "verify"
        device = "emulator"
        timing = "modeled"

        """)


def search_config(base_url: str, *, name: str = "llm-e2e", seed: int = 4,
                  generations: int = 4, population: int = 4) -> str:
    llm = f'base_url = "{base_url}", backoff_base_s = 0.001, backoff_max_s = 0.01, ' \
          f'timeout_s = 30.0'
    return run_section(name, seed) + textwrap.dedent(f"""\
        [engine]
        islands = 1
        population = {population}
        generations = {generations}
        tournament = 2
        elite = 1
        hall_of_fame = 3

        [operators]
        llm_mutate = {{ weight = 1.0, {llm} }}
        llm_repair = {{ weight = 0.5, {llm} }}

        [budget]
        llm_dollars = 1.0
        """)


def pinned_engine(run, hooks=()):
    """``command.open_engine`` with the engine's ``windows_of`` hook set to the loop body."""
    from asmevo.engine.engine import Engine
    from asmevo.engine.parallel import make_pool

    return Engine(run.config, run.archive, run.blobs, run.evaluator,
                  make_pool(run.config.parallel), run_id=run.run_id, hooks=tuple(hooks),
                  windows_of=loop_body)


def run_search(config_text: str, run_dir: Path, *, hooks=(), pinned: bool = True) -> int:
    """create_run + the engine (loop body pinned, or its own hot windows); the run id."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.config import parse_config
    from asmevo.engine.rundir import create_run

    config = parse_config(config_text, base_dir=run_dir.parent)
    with create_run(config, run_dir) as run:
        engine = pinned_engine(run, hooks) if pinned else open_engine(run, hooks)
        try:
            engine.run()
        finally:
            engine.pool.close()
        return run.run_id


@pytest.fixture(scope="module", params=[("pinned", 4), ("profiled", 8)],
                ids=["pinned-loop-body", "profiled-hot-windows"])
def searched(request, tmp_path_factory):
    """One search, shared by the assertions below: (run dir, server, run id, mode)."""
    mode, seed = request.param
    mp = pytest.MonkeyPatch()
    mp.setenv("ANTHROPIC_API_KEY", "dummy")
    mp.setenv("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    srv = ReplayServer(json.loads(SCRIPT.read_text())).start()
    try:
        run_dir = tmp_path_factory.mktemp(f"llm_e2e_{mode}") / "run"
        run_id = run_search(search_config(srv.base_url, seed=seed), run_dir,
                            pinned=mode == "pinned")
        yield run_dir, srv, run_id, mode
    finally:
        srv.stop()
        mp.undo()


def _conn(run_dir: Path):
    import sqlite3
    conn = sqlite3.connect(str(run_dir / "archive.db"))
    conn.row_factory = sqlite3.Row
    return conn


JUDGED = """
SELECT i.*, e.status, e.reason, e.fitness, e.speedup, e.label
FROM individuals i JOIN runs r ON r.run_id = i.run_id
JOIN evaluations e ON e.eval_context = r.eval_context AND e.eval_key = i.eval_key
WHERE i.n_edits > 0 ORDER BY i.generation, i.island, i.slot
"""


def test_good_and_wrong_edits_judged(searched):
    run_dir, srv, _, _ = searched
    rows = [dict(r) for r in _conn(run_dir).execute(JUDGED)]
    by_status: dict[str, set[str]] = {}
    for r in rows:
        by_status.setdefault(r["status"], set()).add(r["eval_key"])
    # one distinct equal candidate (the good edit)
    assert len(by_status.get("equal", ())) == 1, rows
    assert len(by_status.get("mismatch", ())) == 1, rows
    good = next(r for r in rows if r["status"] == "equal")
    edits = json.loads(good["edits"])
    assert edits[-1]["lines"] == GOOD and (edits[-1]["start"], edits[-1]["end"]) == LOOP
    assert good["label"] == "modeled" and good["speedup"] > 1.0 and good["fitness"] > 1.0
    bad = next(r for r in rows if r["status"] == "mismatch")
    assert "dst[" in bad["reason"]
    assert json.loads(bad["edits"])[-1]["lines"][0] == "v_lshlrev_b32_e32 v2, 2, v0"
    # the repair of the wrong edit, in a later generation, is the good edit again: a
    # candidate the run tried already, so it is refused as a duplicate, never built again
    assert not any(r["operator"] == "llm_repair" for r in rows), rows
    dups = [tuple(r) for r in _conn(run_dir).execute(
        "SELECT generation, operator, reason FROM proposals WHERE reason LIKE '%duplicate%'")]
    assert any(op == "llm_repair" and g > bad["generation"] and "(llm_mutate, individual " in why
               for g, op, why in dups), dups
    # every edit applied: no repair aimed at a window the individual cannot take
    assert {r["status"] for r in rows} == {"equal", "mismatch"}, rows
    assert srv.unused == []          # all four recorded answers were asked for


def test_hostile_answer_refused_before_any_tool(searched):
    run_dir, _, _, _ = searched
    reasons = [r[0] for r in _conn(run_dir).execute("SELECT reason FROM proposals")]
    hostile = [r for r in reasons if ".incbin" in r]
    assert hostile and all("answer rejected" in r for r in hostile), reasons
    # no individual carries it
    assert not any(".incbin" in r[0] for r in _conn(run_dir).execute(
        "SELECT edits FROM individuals"))


def test_usage_rows_trace_to_stored_prompts(searched):
    run_dir, srv, _, _ = searched
    conn = _conn(run_dir)
    usage = [dict(r) for r in conn.execute("SELECT * FROM llm_usage ORDER BY id")]
    answered = [r for r in srv.received if not r.answered_with.startswith("none")]
    assert len(usage) == len(answered) >= 4
    assert len({u["call_id"] for u in usage}) == len(usage)
    for u in usage:
        text = conn.execute("SELECT text FROM prompts WHERE prompt_sha256 = ?",
                            (u["prompt_sha256"],)).fetchone()
        assert text is not None, u
        # the stored prompt is the request the server received (the key is a header)
        assert json.loads(text[0]) in [r.body for r in srv.received]
        assert "dummy" not in text[0]
    assert {u["status"] for u in usage} >= {"proposed", "rejected"}


def test_mismatch_verdict_fed_into_a_later_prompt(searched):
    run_dir, srv, _, _ = searched
    conn = _conn(run_dir)
    g, reason = conn.execute(
        "SELECT i.generation, e.reason FROM individuals i JOIN evaluations e "
        "ON e.eval_key = i.eval_key WHERE e.status = 'mismatch'").fetchone()
    later = {u["prompt_sha256"] for u in conn.execute(
        "SELECT prompt_sha256 FROM llm_usage WHERE generation > ?", (g,))}
    texts = [conn.execute("SELECT text FROM prompts WHERE prompt_sha256 = ?",
                          (s,)).fetchone()[0] for s in later]
    assert any("mismatch" in t and reason[:40] in t for t in texts)
    # and the server saw it: the repair exchange (matched on "status: mismatch") was used
    assert any(reason[:40] in r.raw and "Task: repair" in r.raw for r in srv.received)
    assert 3 not in srv.unused


def test_spend_report(searched):
    run_dir, _, run_id, _ = searched
    from asmevo.archive.store import Archive
    from asmevo.operators.llm.spend import archive_spend_report, render_report
    with Archive(run_dir / "archive.db") as a:
        rep = archive_spend_report(a, run_id)
        total = a.llm_dollars(run_id)
    assert rep["total"].cost > 0 and rep["total"].cost == pytest.approx(total)
    assert rep["total"].improvements >= 1 and rep["total"].cost_per_improvement > 0
    assert "llm_mutate" in render_report(rep)


def test_asmevo_report_shows_cost_per_improvement(searched, capsys):
    run_dir, _, run_id, _ = searched
    from asmevo.cli import main
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "LLM spend (cost per accepted improvement)" in out
    assert "llm_mutate" in out and "cost_per_improvement" in out


def test_prompts_show_the_profiled_hot_windows(searched):
    """Every mutation prompt's window is one the engine offered: the loop body when pinned;
    else one of the hot windows of the parent's archived evaluation, drawn by its share of
    the time (or, for a parent not yet evaluated, one of the three largest basic blocks)."""
    import re
    run_dir, srv, _, mode = searched
    conn = _conn(run_dir)
    k0_hot = json.loads(conn.execute(
        "SELECT e.details FROM individuals i JOIN evaluations e ON e.eval_key = i.eval_key "
        "WHERE i.ind_id = 'k0'").fetchone()[0])["hot_windows"]
    assert k0_hot[0][:3] == ["asm_copy", *LOOP]        # the modeled profile ranks it first
    windows = [tuple(map(int, m.groups())) for r in srv.received
               for m in [re.search(r"Window to replace: instructions \[(\d+), (\d+)\)", r.raw)]
               if m]
    assert windows and LOOP in windows
    if mode == "pinned":
        assert set(windows) <= {LOOP, (LOOP[0], LOOP[1] - 3)}
    else:
        hot = {(a, b) for row in conn.execute("SELECT details FROM evaluations")
               for _, a, b, *_ in json.loads(row[0]).get("hot_windows", [])}
        blocks = {(0, 7), (7, 12), (12, 19), (19, 24), (24, 26)}   # K0 before its evaluation
        assert set(windows) <= hot | blocks and len(set(windows)) > 1, windows


def test_real_prompts_carry_the_profile_and_the_full_verdict(searched):
    """The contract end to end: the engine fills the context's ``profile_of`` (the per-line
    profile K0's evaluation kept) and ``verdict_of`` (the archived verdict with its
    details), and both reach the requests the server received."""
    run_dir, srv, _, _ = searched
    on_k0 = [r.raw for r in srv.received
             if "Task: mutate" in r.raw and "Window to replace: instructions [12, 19)" in r.raw
             and "K0 plus 0 accepted" in r.raw]
    assert on_k0, [r.raw[-400:] for r in srv.received]
    for raw in on_k0:
        assert "count" in raw and "cycles(modeled)" in raw and "stall(modeled)" in raw
        # the loop body's first line with its executions (64-lane waves over the launch)
        assert re.search(r"^ +12 +\d+ +\d+ +\d+  v_lshlrev_b32_e32 v2, 2, v1$",
                         raw.replace("\\n", "\n"), re.M), raw[-1500:]
    repairs = [r.raw for r in srv.received if "Task: repair" in r.raw]
    assert repairs and all('\\"index\\": 64' in raw and '\\"buffer\\": \\"dst\\"' in raw
                           for raw in repairs)
