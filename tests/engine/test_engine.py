"""The generational loop: identity by code hash, budgets, crossover, LLM spend, errors."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from asmevo.archive.store import ArchiveError
from asmevo.edits import Edit
from asmevo.engine.command import open_engine
from asmevo.engine.engine import EngineError
from asmevo.engine.evaluator import InstructionCountEvaluator
from asmevo.engine.rundir import create_run, open_run
from asmevo.operator import LlmCall, crossover, mutation
from tests.engine.helpers import write_config


@dataclass(frozen=True)
class CountingEvaluator(InstructionCountEvaluator):
    """Counts evaluations (in-process pool only)."""

    calls: list = None

    def evaluate(self, edits):
        self.calls.append(tuple(edits))
        return super().evaluate(edits)


def _engine(tmp_path, name="r", counting=False, **kw):
    run = create_run(write_config(tmp_path / f"{name}.toml", **kw), tmp_path / name)
    if counting:
        ev = run.evaluator
        run.evaluator = CountingEvaluator(ev.k0_path, ev.kernel, ev.k0_sha256, ev.context_key, [])
    return run, open_engine(run)


def test_identical_variants_are_evaluated_once(tmp_path):
    run, engine = _engine(tmp_path, counting=True, generations=4)
    engine.run()
    conn = run.archive.conn
    keys = [r[0] for r in conn.execute("SELECT eval_key FROM individuals")]
    n_evals = conn.execute("SELECT COUNT(*) FROM evaluations WHERE code_sha256 IS NOT NULL"
                           ).fetchone()[0]
    assert len(run.evaluator.calls) == n_evals            # one evaluation per built candidate
    assert len(keys) > n_evals                            # while individuals repeat candidates
    chains = conn.execute("SELECT COUNT(DISTINCT edits) FROM individuals").fetchone()[0]
    assert chains > len(set(keys))     # distinct edit lists that built the same bytes
    spent = json.loads(conn.execute("SELECT state FROM checkpoints ORDER BY generation DESC"
                                    ).fetchone()[0])["spent"]
    assert spent["evaluations"] == len(run.evaluator.calls)
    run.close()


def test_generation_zero_holds_k0_and_hall_of_fame_is_sorted(tmp_path):
    run, engine = _engine(tmp_path, generations=2)
    engine.run()
    st = engine.state
    assert all(pop[0].id == "k0" or pop[0].fitness >= 1.0 for pop in st.populations)
    fits = [ind.fitness for ind in st.hall_of_fame]
    assert fits == sorted(fits, reverse=True) and len(set(i.eval_key for i in st.hall_of_fame)) \
        == len(st.hall_of_fame)
    assert len(st.logbook) == 3 * 2                       # generations 0..2, two islands
    assert run.archive.run()["status"] == "finished"
    run.close()


def test_k0_is_judged_before_the_loop_and_alone_on_every_island(tmp_path):
    run, engine = _engine(tmp_path, generations=1)
    engine.load_state()
    with pytest.raises(EngineError, match="start"):
        engine.step()                                  # nothing to select from yet
    engine.start()
    pops = engine.state.populations
    assert [[ind.id for ind in pop] for pop in pops] == [["k0"], ["k0"]]
    assert engine.state.generation == -1 and engine.pending.fresh == 1
    assert run.archive.last_checkpoint(run.run_id) is None     # committed with generation 0
    engine.start()                                     # judged once
    assert engine.pending.fresh == 1
    result = engine.step()
    assert (result.generation, engine.pending.fresh) == (0, 0)
    assert [pop[0].id for pop in engine.state.populations] == ["k0", "k0"]
    assert all(len(pop) == 4 for pop in engine.state.populations)
    assert engine.state.spent.evaluations == result.fresh >= 1
    rows = run.archive.conn.execute("SELECT generation FROM individuals WHERE ind_id = 'k0'")
    assert [r[0] for r in rows] == [0]
    engine.start()                                     # a state past K0: nothing to do
    assert engine.pending.fresh == 0
    engine.pool.close()
    run.close()


def test_a_lone_member_wins_every_tournament_drawing_nothing():
    import random

    from asmevo.engine.selection import tournament
    @dataclass(frozen=True)
    class Member:
        fitness: float

    rng = random.Random(3)
    state = rng.getstate()
    k0, a = Member(1.0), Member(2.0)
    assert tournament([k0], 3, 2, rng) == [k0] * 3
    assert rng.getstate() == state
    assert set(tournament([k0, a], 20, 2, rng)) == {k0, a}      # tournaments of two, drawn
    assert rng.getstate() != state


def test_evaluation_budget_stops_cleanly(tmp_path):
    run, engine = _engine(tmp_path, generations=50, budget="evaluations = 3")
    reason = engine.run()
    assert reason == "budget.evaluations"
    assert engine.state.spent.evaluations == 3          # a hard limit (test_budget.py)
    row = run.archive.run()
    assert (row["status"], row["stop_reason"]) == ("finished", "budget.evaluations")
    assert run.archive.last_checkpoint(run.run_id)[0] == engine.state.generation
    run.close()


def test_wall_clock_budget_stops_cleanly(tmp_path):
    run, engine = _engine(tmp_path, generations=10_000, budget="wall_seconds = 0.5")
    assert engine.run() == "budget.wall_seconds"
    assert engine.state.generation < 10_000
    run.close()


@mutation("test_paid_mutation", targets=("amdgpu",))
class PaidMutation:
    """Charges $0.40 per call through the context (like an LLM operator) and deletes a nop."""

    def mutate(self, individual, context):
        if context.budget_left() <= 0:
            return context.reject("LLM budget spent")
        context.charge(LlmCall(call_id=f"call-{context.where['generation']}-"
                               f"{context.where['island']}-{context.where['slot']}",
                               model="test", prompt=f"optimize {context.kernel}",
                               tokens_in=100, tokens_out=20, cost=0.40, cache_read_tokens=50))
        return get_nop_remove().mutate(individual, context)


def get_nop_remove():
    from asmevo.operator import get_operator
    return get_operator("nop_remove")


def test_llm_budget_is_recorded_and_stops_the_run(tmp_path):
    run, engine = _engine(tmp_path, generations=20, budget="llm_dollars = 2.0",
                          operators="test_paid_mutation = 1.0")
    assert engine.run() == "budget.llm_dollars"
    conn = run.archive.conn
    total = conn.execute("SELECT SUM(cost), COUNT(*) FROM llm_usage").fetchone()
    assert total[0] == pytest.approx(engine.state.spent.llm_dollars) and total[0] >= 2.0 - 1e-9
    prompt = conn.execute("SELECT p.text FROM llm_usage u JOIN prompts p USING (prompt_sha256)"
                          " LIMIT 1").fetchone()[0]
    assert prompt == "optimize asm_copy"
    refused = conn.execute("SELECT COUNT(*) FROM proposals WHERE reason = 'LLM budget spent'"
                           ).fetchone()[0]
    assert refused >= 1
    run.close()


@crossover("test_graft", targets=("amdgpu",))
class Graft:
    """Crossover: append the mate's last edit to a copy of the first parent (test only)."""

    def crossover(self, a, b, context):
        if not b.edits:
            return context.reject("mate has no edit")
        e = b.edits[-1]
        n = len(context.program(a).function(context.kernel).instructions)
        if e.end > n:
            return context.reject("mate's edit does not fit")
        return Edit(e.function, e.start, e.end, e.lines, operator="test_graft")


def test_crossover_records_both_parents(tmp_path):
    run, engine = _engine(tmp_path, generations=4, extra="crossover_rate = 0.7",
                          operators="nop_remove = 1.0\nswap_adjacent = 1.0\ntest_graft = 1.0")
    engine.run()
    rows = run.archive.conn.execute(
        "SELECT parents FROM individuals WHERE operator = 'test_graft'").fetchall()
    assert rows and all(len(json.loads(r[0])) == 2 for r in rows)
    kinds = dict(run.archive.conn.execute(
        "SELECT kind, COUNT(*) FROM proposals GROUP BY kind").fetchall())
    assert kinds["crossover"] > 0 and kinds["mutation"] > 0
    run.close()


@mutation("test_bad_return", targets=("amdgpu",))
class BadReturn:
    def mutate(self, individual, context):
        return "s_nop 0"


@mutation("test_two_windows", targets=("amdgpu",))
class TwoWindows:
    """Proposes two edits at once (a structural rewrite): drop asm_copy's s_nop and
    rewrite its first line unchanged."""

    def mutate(self, individual, context):
        if individual.edits:
            return context.reject("already applied")
        k = context.kernel
        return (Edit(k, 9, 10, (), operator="test_two_windows"),
                Edit(k, 0, 1, ("s_load_dwordx2 s[4:5], s[0:1], 0x0",),
                     operator="test_two_windows"))


def test_a_proposal_of_several_edits_extends_the_history_by_all_of_them(tmp_path):
    run, engine = _engine(tmp_path, operators="test_two_windows = 1.0", generations=1)
    engine.run()
    rows = run.archive.conn.execute(
        "SELECT edits, n_edits FROM individuals WHERE operator = 'test_two_windows'").fetchall()
    assert rows and all(n == 2 for _, n in rows)
    assert [e["start"] for e in json.loads(rows[0][0])] == [9, 0]
    run.close()


@mutation("test_none_return", targets=("amdgpu",))
class NoneReturn:
    def mutate(self, individual, context):
        return None             # the contract: an Edit, a tuple of Edits or a Rejected


@pytest.mark.parametrize("name", ["test_bad_return", "test_none_return"])
def test_an_operator_returning_a_non_edit_is_an_engine_error(tmp_path, name):
    run, engine = _engine(tmp_path, operators=f"{name} = 1.0")
    with pytest.raises(EngineError, match="not an Edit, a tuple of Edits or a Rejected"):
        engine.run()
    run.close()


def test_resume_refuses_missing_or_foreign_run_dirs(tmp_path):
    with pytest.raises(ArchiveError, match="no such run directory"):
        open_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArchiveError, match="not a run directory"):
        open_run(tmp_path / "empty")


def test_a_run_dir_holds_one_run_and_one_process(tmp_path):
    run, engine = _engine(tmp_path, generations=1)
    with pytest.raises(ArchiveError, match="in use"):
        open_run(tmp_path / "r")
    engine.run()
    run.close()
    with pytest.raises(ArchiveError, match="already holds a run"):
        create_run(tmp_path / "r.toml", tmp_path / "r")
    with open_run(tmp_path / "r") as again:
        assert again.archive.run()["status"] == "finished"


def test_a_recorded_llm_call_is_stored_once_and_can_be_looked_up(tmp_path):
    from asmevo.engine.budget import LlmSpend

    run, engine = _engine(tmp_path, generations=0)
    spend = LlmSpend(run.archive, run.run_id, 1.0, 0.0)
    call = LlmCall("c1", "m", "prompt text", 10, 2, 0.25)
    where = {"generation": 0, "island": 0, "slot": 1, "operator": "x"}
    spend.record(call, where)
    spend.record(call, where)                                 # replayed: not counted twice
    assert spend.spent == pytest.approx(0.25) and spend.remaining() == pytest.approx(0.75)
    row = spend.recorded("c1")
    assert row["cost"] == 0.25 and spend.recorded("other") is None
    assert run.archive.llm_dollars(run.run_id) == pytest.approx(0.25)
    run.close()
