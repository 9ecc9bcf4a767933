"""A small real run (instruction-count evaluator on asm_copy), stepped by hand, for the dashboard."""
from __future__ import annotations

import pytest

from tests.engine.helpers import write_config


@pytest.fixture()
def stepped_run(tmp_path):
    """(run directory, engine) after two committed generations; ``engine.step()`` commits more."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run

    cfg = write_config(tmp_path / "run.toml", generations=8, population=4)
    run = create_run(cfg, tmp_path / "run")
    engine = open_engine(run)
    engine.load_state()
    engine.start()
    engine.step()
    engine.step()
    yield tmp_path / "run", engine
    engine.pool.close()
    run.close()
