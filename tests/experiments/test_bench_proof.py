"""bench_proof.py's search path end to end on the smallest corpus kernel: it searches with
bench_search's engine settings (a setting bench_search gained later once broke it with an
AttributeError), proves the accepted edits and prints its figures (a benchmark is run by
hand; this only checks that it runs and that its figures are consistent)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_proof.py"


def test_a_search_and_its_proofs_run_and_print_consistent_figures(tmp_path):
    pytest.importorskip("z3", reason="the prover is an optional extra (z3-solver)")
    env = dict(os.environ, ASMEVO_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(SCRIPT), "--set", "corpus", "--evaluations", "3",
                        "--kernels", "corpus/asm_copy", "--results", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    figs = dict(line.split("=", 1) for line in r.stdout.splitlines()
                if "=" in line and " " not in line)
    assert int(figs["edits"]) >= 1 and int(figs["errors"]) == 0
    assert int(figs["proved"]) <= int(figs["edits"])
    assert float(figs["p90_seconds"]) >= float(figs["median_seconds"]) or \
        int(figs["edits"]) == 1
    assert (tmp_path / "runs" / "corpus" / "asm_copy.proof.json").is_file()
