"""``asmevo ablate``: config validation, the statistics, and kill-and-re-run resumption.

Cells use the basic operators and the engine's instruction-count test evaluator
(real builds, static score) on the two hand-written asm kernels, so the whole
file runs in well under a minute and does not depend on the rule operators.
"""
from __future__ import annotations

import fcntl
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asmevo.ablate.cells import AblationError, cell_state
from asmevo.ablate.config import CORPUS, load_ablation, parse_ablation
from asmevo.ablate.summary import _curve, evals_to_gain, t975, t_interval
from asmevo.engine.config import ConfigError, parse_config
from tests.engine.helpers import ROOT, archive_content, assert_same_archive, without_matplotlib
from tests.conftest import HAS_MATPLOTLIB

TINY = textwrap.dedent("""\
    [ablation]
    name = "tiny"
    seeds = [3]
    kernels = ["asm_copy", "asm_scale"]
    size = "small"
    evaluations = 30

    [base.run]
    evaluator = "instruction-count"

    [base.engine]
    islands = 2
    population = 4
    generations = 12
    migration_interval = 2
    tournament = 2
    hall_of_fame = 3

    [sets.nop]
    nop_remove = 1.0

    [sets.both]
    nop_remove = 1.0
    swap_adjacent = { weight = 2.0, tries = 8 }
    """)


def _parse(text: str = TINY):
    return parse_ablation(text, path=ROOT / "experiments" / "ablations" / "t.toml")


# -- config -------------------------------------------------------------------------------

def test_cells_are_engine_configs():
    ab = _parse()
    cells = ab.cells()
    assert [c.key for c in cells] == [("nop", "asm_copy", 3), ("both", "asm_copy", 3),
                                      ("nop", "asm_scale", 3), ("both", "asm_scale", 3)]
    cfg = cells[1].config()
    assert cfg.run.seed == 3 and cfg.run.size == "small" and cfg.budget.evaluations == 30
    assert cfg.run.spec == CORPUS / "asm_copy" and cfg.engine.population == 4
    assert [o.name for o in cfg.operators] == ["nop_remove", "swap_adjacent"]
    assert dict(cfg.operators[1].params) == {"tries": 8}
    assert cells[1].relpath == Path("cells/both/asm_copy/seed3")
    # the cell text is the cell's identity: the same file gives the same text
    assert [c.text for c in _parse().cells()] == [c.text for c in cells]


def test_all_kernels_and_the_shipped_rules_config():
    ab = _parse(TINY.replace('kernels = ["asm_copy", "asm_scale"]', 'kernels = "all"'))
    assert len(ab.kernels) == len(list(CORPUS.glob("*/spec.toml"))) >= 38
    rules = load_ablation(ROOT / "experiments" / "ablations" / "rules.toml")
    assert len(rules.seeds) == 3 and rules.size == "small"
    for c in rules.cells()[:len(rules.sets)]:
        parse_config(c.text, base_dir=c.base_dir)


@pytest.mark.parametrize("old, new, key", [
    ("seeds = [3]", "sedes = [3]", "ablation.sedes"),
    ("seeds = [3]", "seeds = []", "ablation.seeds"),
    ("seeds = [3]", "seeds = [3, 3]", "ablation.seeds"),
    ('kernels = ["asm_copy", "asm_scale"]', 'kernels = ["asm_kopy"]', "ablation.kernels"),
    ('kernels = ["asm_copy", "asm_scale"]', 'kernels = "some"', "ablation.kernels"),
    ('size = "small"', 'size = "tiny"', "ablation.size"),
    ("evaluations = 30", "evaluations = 0", "ablation.evaluations"),
    ("evaluations = 30", "", "ablation.evaluations"),
    ("evaluations = 30", "evaluations = 30\nwall_seconds = -1", "ablation.wall_seconds"),
    ("[base.engine]", "[base.engine]\npopsize = 3", "base.engine.popsize"),
    ("islands = 2", "islands = 0", "base.engine.islands"),
    ('evaluator = "instruction-count"', 'evaluator = "magic"', "base.run.evaluator"),
    ('evaluator = "instruction-count"', "seed = 4", "base.run.seed"),
    ("[base.engine]", "[base.operators]\nnop_remove = 1.0\n[base.engine]", "base.operators"),
    ("[base.engine]", "[base.budget]\nevaluations = 3\n[base.engine]", "base.budget"),
    ("[base.engine]", "[base.parallel]\nn_jobs = 0\n[base.engine]", "base.parallel.n_jobs"),
    ("[sets.nop]\nnop_remove = 1.0", "[sets.nop]\nno_such_op = 1.0", "sets.nop.no_such_op"),
    ("tries = 8 }", "tries = 8, colour = 3 }", "sets.both.swap_adjacent.colour"),
    ("[sets.nop]\nnop_remove = 1.0", "[sets.nop]\nnop_remove = 0.0", "sets.nop"),
    ("[sets.both]", "[sets.\"a/b\"]\nnop_remove = 1.0\n[sets.both]", "sets.a/b"),
    ("[ablation]", "[ablations]\n[ablation]", "ablations"),
])
def test_bad_key_or_value_names_the_key(old, new, key):
    assert old in TINY
    with pytest.raises(ConfigError) as exc:
        _parse(TINY.replace(old, new, 1))
    assert f"{key}:" in str(exc.value)


# -- statistics ---------------------------------------------------------------------------

def test_t_interval_is_a_students_t_interval():
    assert t975(1) == 12.706 and t975(2) == 4.303 and abs(t975(200) - 1.972) < 2e-3
    m, lo, hi, n = t_interval([1.0, 2.0, 3.0, float("nan")])
    assert (m, n) == (2.0, 3) and math.isclose(hi - m, 4.303 / math.sqrt(3))
    assert math.isclose(m - lo, hi - m)
    m, lo, hi, n = t_interval([1.5])
    assert m == 1.5 and math.isnan(lo) and math.isnan(hi) and n == 1
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 29, 31, 60, 500):
        assert abs(t975(df) - stats.t.ppf(0.975, df)) < 2e-3


def test_best_curve_and_evaluations_to_95_percent_of_the_gain():
    inds = pd.DataFrame({
        "first": [True, True, False, True, True, True],
        "status": ["equal", "equal", "equal", "not_equal", "equal", "equal"],
        "fitness": [1.0, 1.1, 1.1, 0.0, 1.05, 1.2],
    })
    curve = _curve(inds)
    assert np.allclose(curve, [1.0, 1.0, 1.1, 1.1, 1.1, 1.2])
    assert evals_to_gain(curve) == 5                   # 1 + 0.95 * 0.2 = 1.19
    assert evals_to_gain(curve, 0.5) == 2              # 1.1 reached at evaluation 2
    assert math.isnan(evals_to_gain(np.ones(4)))      # no gain: undefined


# -- running ------------------------------------------------------------------------------

def _env(tmp_path_factory) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return os.environ | {"PYTHONPATH": path,
                         "ASMEVO_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}


_CLI = "import sys; from asmevo.cli import main; sys.exit(main(sys.argv[1:]))"


def _ablate_cmd(config: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-c", _CLI, "ablate", str(config), "--out", str(out),
            "--jobs", str(jobs)]


def _ablate(env, config, out, jobs) -> subprocess.CompletedProcess:
    proc = subprocess.run(_ablate_cmd(config, out, jobs), check=False, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _cells(out: Path) -> list[Path]:
    return sorted(p.parent for p in (out / "cells").glob("*/*/*/archive.db"))


def _row_counts(cell: Path) -> tuple:
    conn = sqlite3.connect(cell / "archive.db")
    try:
        return tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                     for t in ("individuals", "evaluations", "proposals", "checkpoints"))
    finally:
        conn.close()


def _status(cell: Path) -> tuple[str, int]:
    conn = sqlite3.connect(cell / "archive.db")
    try:
        runs = conn.execute("SELECT status FROM runs").fetchall()
        cps = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        return (runs[0][0] if runs else "none"), cps
    except sqlite3.OperationalError:      # created, schema not written yet
        return "none", 0
    finally:
        conn.close()


def _wait_unlocked(out: Path, timeout: float = 20.0) -> None:
    """Until no process holds a cell's run lock (orphaned workers die with the parent)."""
    deadline = time.monotonic() + timeout
    for lock in (out / "cells").glob("*/*/*/lock"):
        fd = os.open(lock, os.O_RDWR)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline, f"{lock} still held"
                    time.sleep(0.1)
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tiny ablation, uninterrupted, cells one after another in this process' child."""
    base = tmp_path_factory.mktemp("ablate-ref")
    cfg = base / "tiny.toml"
    cfg.write_text(TINY)
    env = _env(tmp_path_factory)
    proc = _ablate(env, cfg, base / "out", jobs=1)
    return {"config": cfg, "env": env, "out": base / "out", "stdout": proc.stdout}


def test_outputs(reference):
    out = reference["out"]
    for name in ("summary.csv", "operators.csv", "kernels.csv", "cells.csv", "summary.md",
                 "ablation.toml"):
        assert (out / name).is_file(), name
    s = pd.read_csv(out / "summary.csv")
    assert list(s["set"]) == ["nop", "both"] and set(s["timing"]) == {"modeled"}
    assert (s["cells_done"] == 2).all() and (s["geomean_speedup"] > 1.0).all()
    assert s["geomean_speedup_lo"].isna().all()           # one seed: no interval
    ops = pd.read_csv(out / "operators.csv")
    assert list(zip(ops["set"], ops["operator"])) == [
        ("nop", "nop_remove"), ("both", "nop_remove"), ("both", "swap_adjacent")]
    assert len(pd.read_csv(out / "cells.csv")) == 4
    md = (out / "summary.md").read_text()
    assert "| set |" in md and "modeled" in md and "Student-t" in md
    if HAS_MATPLOTLIB:
        assert (out / "best_vs_evaluations.png").read_bytes()[:4] == b"\x89PNG"
    else:                           # a machine without the plot extra: the tables and the hint
        assert not (out / "best_vs_evaluations.png").exists()
        assert "pip install 'asmevo[plot]'" in reference["stdout"]
    # every cell is an ordinary run directory
    assert len(_cells(out)) == 4 and all((c / "config.toml").is_file() for c in _cells(out))


def test_rerun_of_a_finished_ablation_runs_nothing(reference, tmp_path):
    out = reference["out"]
    before = {c: ((c / "archive.db").stat().st_mtime_ns, _row_counts(c)) for c in _cells(out)}
    table = (out / "summary.csv").read_text()
    proc = _ablate(reference["env"], reference["config"], out, jobs=2)
    assert "4 finished, 0 to resume, 0 to start" in proc.stdout
    assert " ran " not in proc.stdout and "resumed" not in proc.stdout
    assert {c: ((c / "archive.db").stat().st_mtime_ns, _row_counts(c))
            for c in _cells(out)} == before
    assert (out / "summary.csv").read_text() == table


def test_tables_without_matplotlib_say_how_to_get_the_plot(reference, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(reference["out"], out)
    (out / "best_vs_evaluations.png").unlink(missing_ok=True)   # absent without the plot extra
    env = without_matplotlib(reference["env"], tmp_path)
    proc = _ablate(env, reference["config"], out, jobs=1)
    assert "plots skipped: matplotlib is not installed (pip install 'asmevo[plot]'" in proc.stdout
    assert (out / "summary.csv").read_text() == (reference["out"] / "summary.csv").read_text()
    assert not (out / "best_vs_evaluations.png").exists()


def test_changed_config_is_an_error_not_a_mix(reference, tmp_path):
    ab = _parse(reference["config"].read_text().replace("evaluations = 30", "evaluations = 31"))
    with pytest.raises(AblationError, match="cells/nop/asm_copy/seed3.*different config"):
        cell_state(ab.cells()[0], reference["out"])


def test_kill_and_rerun_resumes(reference, tmp_path):
    """SIGKILL the `asmevo ablate` process (only it: its workers must follow) once one cell
    has finished and another has committed generations; re-run the same command. The
    finished cell is not touched again, the interrupted one resumes from its archive, and
    tables and archives equal the uninterrupted run's."""
    for attempt in range(3):
        # a worker may still finish the cell seen running before it notices its parent
        # is gone: then nothing is left to resume, and the kill is tried again afresh
        out = tmp_path / f"out{attempt}"
        finished, partial, states = _kill_once(reference, out)
        if finished and partial:
            break
    assert finished and partial, states

    again = _ablate(reference["env"], reference["config"], out, jobs=2)
    assert f"{len(finished)} finished, " in again.stdout
    for c in partial:
        s, k, seed = c.relative_to(out / "cells").parts
        assert f"resumed {s} / {k} / seed {seed[4:]}" in " ".join(again.stdout.split())
    for c, (mtime, counts) in finished.items():
        assert (c / "archive.db").stat().st_mtime_ns == mtime and _row_counts(c) == counts
    for name in ("summary.csv", "operators.csv", "kernels.csv", "cells.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name),
                                      pd.read_csv(reference["out"] / name), obj=name)
    for c in _cells(out):
        assert_same_archive(archive_content(c),
                            archive_content(reference["out"] / c.relative_to(out)))


def _kill_once(reference, out: Path):
    """One ``asmevo ablate`` SIGKILLed while a cell has committed generations: (finished
    cells with their archive's mtime and row counts, interrupted cells, every state)."""
    proc = subprocess.Popen(_ablate_cmd(reference["config"], out, jobs=2), cwd=ROOT,
                            env=reference["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith("[1/4]"):
                break
        else:
            raise AssertionError("ablation ended before a cell finished: "
                                 + proc.stderr.read())
        deadline = time.monotonic() + 60
        while not any(_status(c) [0] == "running" and _status(c)[1] > 0 for c in _cells(out)):
            assert time.monotonic() < deadline and proc.poll() is None, "nothing in progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    _wait_unlocked(out)
    states = {c: _status(c) for c in _cells(out)}
    finished = {c: ((c / "archive.db").stat().st_mtime_ns, _row_counts(c))
                for c, (st, _) in states.items() if st == "finished"}
    partial = [c for c, (st, cps) in states.items() if st == "running" and cps > 0]
    return finished, partial, states
