"""A small real run (instruction-count evaluator on asm_copy), stepped by hand, for the dashboard."""
from __future__ import annotations

import pytest

from tests.engine.helpers import write_config


@pytest.fixture()
def stepped_run(tmp_path, request):
    """(run directory, engine) after two committed generations; ``engine.step()`` commits
    more (8 generations in all; a test marked ``generations(N)``: N)."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run

    mark = request.node.get_closest_marker("generations")
    cfg = write_config(tmp_path / "run.toml", generations=mark.args[0] if mark else 8,
                       population=4)
    run = create_run(cfg, tmp_path / "run")
    engine = open_engine(run)
    engine.load_state()
    engine.start()
    engine.step()
    engine.step()
    yield tmp_path / "run", engine
    engine.pool.close()
    run.close()


@pytest.fixture()
def crafted_root(tmp_path, stepped_run):
    """(root, run a, run b): a folder of two runs and an ablation's tables, every text
    field markup (tests/serve/crafted.py); run a's kernel and edit windows too, run b's
    kept real so its listing renders; the runs' directory names are markup as well."""
    import shutil

    from tests.serve.crafted import DIR_MARK, ablation_tables, craft

    run_dir, engine = stepped_run
    engine.archive.close()
    root = tmp_path / "served"
    a, b = root / f"a{DIR_MARK}", root / f"b{DIR_MARK}"
    shutil.copytree(run_dir, a)
    shutil.copytree(run_dir, b)
    craft(a)
    craft(b, kernel_too=False)
    ablation_tables(root)
    return root, a, b


VERIFIED = """
[run]
name = "verified"
seed = 7
spec = "{spec}"
size = "small"
evaluator = "verify"
device = "emulator"
timing = "modeled"

[engine]
islands = 2
population = 4
generations = 12
migration_interval = 2
migration_size = 1
tournament = 2
elite = 1
hall_of_fame = 3

[operators]
swap_adjacent = {{ weight = 2.0, tries = 8 }}
nop_remove = 1.0

[budget]

[parallel]
n_jobs = 1
"""


@pytest.fixture()
def verified_run(tmp_path):
    """(run directory, engine) of a search that verifies its candidates on the emulator
    (asm_copy; its verdicts carry K0's hot windows), after three committed generations."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run
    from tests.engine.helpers import KERNELS

    cfg = tmp_path / "run.toml"
    cfg.write_text(VERIFIED.format(spec=KERNELS / "asm_copy"))
    run = create_run(cfg, tmp_path / "run")
    engine = open_engine(run)
    engine.load_state()
    engine.start()
    for _ in range(3):
        engine.step()
    yield tmp_path / "run", engine
    engine.pool.close()
    run.close()


def reject_one(run_dir) -> str:
    """Judge one edited individual of a closed run's archive rejected, with the verdict a
    launch-family mismatch writes: the member's scalars and the first differing element,
    floats the archive's JSON keeps as ``NaN`` and ``Infinity`` (json.dumps writes them
    so). Its id."""
    import json
    import sqlite3

    conn = sqlite3.connect(run_dir / "archive.db")
    ind_id, key = conn.execute("SELECT ind_id, eval_key FROM individuals WHERE n_edits > 0 "
                               "ORDER BY generation DESC, slot LIMIT 1").fetchone()
    details = {"member": {"label": "N=9, alpha=nan", "params": {"N": 9, "alpha": float("nan")}},
               "first_mismatch": {"buffer": "dst", "index": 3, "expected": 1.5,
                                  "got": float("nan"), "max_abs_error": float("inf")}}
    conn.execute("UPDATE evaluations SET status = 'mismatch', reason = ?, details = ?, "
                 "fitness = 0.0, timing = NULL WHERE eval_key = ?",
                 ("output dst[3] differs at family member N=9", json.dumps(details), key))
    conn.commit()
    conn.close()
    return ind_id
