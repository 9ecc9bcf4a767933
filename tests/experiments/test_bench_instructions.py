"""bench_instructions.py refuses what it cannot count with one line and exit 2 (the count
itself runs valgrind for minutes: a benchmark, run by hand)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "bench_instructions.py"


def _run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_bad_candidate_counts_exit_2():
    for bad in ("3", "4,4", "0,5", "a,b"):
        r = _run("--candidates", bad)
        assert r.returncode == 2, (bad, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "--candidates" in r.stderr


def test_missing_valgrind_is_named(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))     # nothing on PATH, valgrind included
    r = _run(env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == "valgrind not found (Debian: apt-get install valgrind)"


def test_not_a_checkout(tmp_path):
    r = _run("--root", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip() == f"{tmp_path}: not a checkout with experiments/bench_verify.py"


def test_proof_off_reaches_only_checkouts_with_a_prover(tmp_path):
    """--proof off turns this checkout's prove stage off; an older checkout, whose
    bench_verify has no --proof (and no prover), is run as it is."""
    from tests.experiments import load_bench
    b = load_bench("bench_instructions")
    assert b._bench(ROOT, "s", 2, "off")[-2:] == ["--proof", "off"]
    assert "--proof" not in b._bench(ROOT, "s", 2, "on")
    old = tmp_path / "experiments"
    old.mkdir()
    (old / "bench_verify.py").write_text("print('one launch')\n")
    assert b._bench(tmp_path, "s", 2, "off")[-2:] == ["--repeat", "2"]
