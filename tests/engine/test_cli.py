"""``asmevo run | resume | report | best`` as a user runs them (non-TTY output)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.engine.helpers import ROOT, without_matplotlib, write_config


def _asmevo(*args, cwd=ROOT, env=None):
    env = env or os.environ | {"PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "asmevo.cli", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    os.environ.setdefault("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    cfg = write_config(tmp / "c.toml", generations=3)
    proc = _asmevo("run", cfg, "--run-dir", tmp / "run")
    return tmp, proc


def test_run_prints_plain_progress_lines(finished):
    _, proc = finished
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    gens = [ln for ln in lines if ln.startswith("gen ")]
    assert len(gens) == 4 and "\r" not in proc.stdout and "\x1b" not in proc.stdout
    assert "evals" in gens[-1] and "best/island" in gens[-1] and "eta" in gens[-1]
    assert lines[-1].startswith("finished (engine.generations)")


def test_report_and_best(finished, tmp_path):
    tmp, _ = finished
    rep = _asmevo("report", tmp / "run", "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    assert "== operators ==" in rep.stdout and "acceptance_rate" in rep.stdout
    assert (tmp_path / "rep" / "best_by_island.png").exists()
    best = _asmevo("best", tmp / "run", "--out", tmp_path / "K1.co")
    assert best.returncode == 0, best.stderr
    side = json.loads((tmp_path / "K1.co.json").read_text())
    assert (tmp_path / "K1.co").read_bytes()[:4] == b"\x7fELF"
    assert side["timing_label"] == "modeled" and side["speedup"] >= 1.0
    assert side["verdict"]["status"] == "equal" and side["lineage"][0]["ind_id"] == "k0"
    import hashlib
    assert hashlib.sha256((tmp_path / "K1.co").read_bytes()).hexdigest() == side["code_sha256"]


def test_report_without_matplotlib_prints_tables_and_how_to_get_plots(finished, tmp_path):
    tmp, _ = finished
    env = without_matplotlib(os.environ | {"PYTHONPATH": str(ROOT)}, tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import matplotlib"], env=env,
                           capture_output=True, text=True)
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr
    rep = _asmevo("report", tmp / "run", "--out", tmp_path / "rep", env=env)
    assert rep.returncode == 0 and rep.stderr == "", rep.stderr
    assert "== operators ==" in rep.stdout and "acceptance_rate" in rep.stdout
    assert rep.stdout.rstrip().endswith("plots skipped: matplotlib is not installed "
                                        "(pip install 'asmevo[plot]', or pip install matplotlib)")
    assert (tmp_path / "rep" / "operators.csv").is_file()
    assert not list((tmp_path / "rep").glob("*.png"))


def test_best_rebuilds_a_lost_blob_from_its_edits(finished, tmp_path):
    tmp, _ = finished
    for blob in (tmp / "run" / "blobs").rglob("*.co"):
        blob.write_bytes(b"damaged")
    proc = _asmevo("best", tmp / "run", "--out", tmp_path / "K1.co")
    assert proc.returncode == 0, proc.stderr
    assert "rebuilding" in proc.stdout
    side = json.loads((tmp_path / "K1.co.json").read_text())
    import hashlib
    assert hashlib.sha256((tmp_path / "K1.co").read_bytes()).hexdigest() == side["code_sha256"]


def test_resume_of_finished_run_is_a_no_op(finished):
    tmp, _ = finished
    proc = _asmevo("resume", tmp / "run")
    assert proc.returncode == 0 and "already finished" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (("resume", "/nonexistent/run"), "no such run directory"),
    (("report", "/nonexistent/run"), "no such run directory"),
    (("best", "/nonexistent/run", "--out", "/tmp/x.co"), "no such run directory"),
    (("run", "/nonexistent/c.toml"), "cannot read config"),
])
def test_errors_are_one_line_and_exit_2(args, message):
    proc = _asmevo(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_config_names_the_key(tmp_path):
    cfg = write_config(tmp_path / "c.toml")
    cfg.write_text(cfg.read_text().replace("islands = 2", "islands = -1"))
    proc = _asmevo("run", cfg, "--run-dir", tmp_path / "run")
    assert proc.returncode == 2 and "engine.islands" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_corrupt_archive_in_run_dir_is_an_error_not_a_fresh_start(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "archive.db").write_bytes(b"garbage" * 100)
    proc = _asmevo("resume", tmp_path / "run")
    assert proc.returncode == 2 and "not an asmevo archive" in proc.stderr
    cfg = write_config(tmp_path / "c.toml")
    proc = _asmevo("run", cfg, "--run-dir", tmp_path / "run")
    assert proc.returncode == 2 and "not an asmevo archive" in proc.stderr
    assert (tmp_path / "run" / "archive.db").read_bytes() == b"garbage" * 100
