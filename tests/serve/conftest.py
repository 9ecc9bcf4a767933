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
