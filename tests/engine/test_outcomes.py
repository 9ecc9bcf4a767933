"""A search that finds nothing says why, with the dominant reasons."""
from __future__ import annotations

import io

from asmevo.engine.command import open_engine
from asmevo.engine.outcomes import why_nothing
from asmevo.engine.progress import Progress
from asmevo.engine.rundir import create_run
from tests.engine.helpers import write_config


def _rows(n: int, reason: str, outcome: str = "none") -> list[dict]:
    return [{"generation": 1, "island": 0, "slot": i, "operator": "schedule",
             "kind": "mutation", "outcome": outcome, "reason": reason, "ind_id": None}
            for i in range(n)]


def test_all_refused_by_the_gate_is_said_with_the_reason(tmp_path):
    run = create_run(write_config(tmp_path / "c.toml", generations=0), tmp_path / "run")
    try:
        gate = ("static gate rejects the rewrite: waitcnt: k[{}]: 's_barrier' synchronizes "
                "with LDS while 'ds_write_b32 v4, v1' (#{}) may be outstanding")
        rows = [r | {"reason": gate.format(10 + i, 9 + i)} for i, r in enumerate(_rows(40, ""))]
        with run.archive.transaction() as conn:
            run.archive.put_proposals(conn, run.run_id, rows)
        why = why_nothing(run.archive, run.run_id)
        assert why.startswith("all 40 proposals were refused by the static gate: ")
        assert "'s_barrier' synchronizes with LDS" in why and "(40x)" in why   # one reason
    finally:
        run.close()


def test_mixed_reasons_are_counted(tmp_path):
    run = create_run(write_config(tmp_path / "c.toml", generations=0), tmp_path / "run")
    try:
        rows = _rows(3, "no window with two independent instructions") + [
            r | {"slot": 10 + r["slot"]} for r in _rows(2, "static gate rejects the rewrite: "
                                                          "hazard: k[3]: x")]
        with run.archive.transaction() as conn:
            run.archive.put_proposals(conn, run.run_id, rows)
        why = why_nothing(run.archive, run.run_id)
        assert why.startswith("of 5 proposals, 2 refused by the static gate")
        assert "3 proposed nothing (no window with two independent instructions (3x))" in why
    finally:
        run.close()


def test_finished_line_carries_the_reason_and_a_real_run_states_it(tmp_path):
    out = io.StringIO()
    # a real run: the engine hands the finished hook its reason (None when it found one)
    run = create_run(write_config(tmp_path / "c.toml", generations=1,
                                  operators="nop_remove = 1.0"), tmp_path / "run")
    try:
        open_engine(run, (Progress(run.config, out, tty=False),)).run()
    finally:
        run.close()
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("finished (engine.generations)")
    p = Progress(run.config, io.StringIO(), tty=False)

    class St:
        hall_of_fame = []

        class spent:
            evaluations = 40
    p("finished", {"reason": "engine.generations", "state": St,
                   "why": "all 40 proposals were refused by the static gate: x (40x)"})
    assert "no speedup found (modeled): all 40 proposals were refused" in p.stream.getvalue()
