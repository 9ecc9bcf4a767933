"""prove_wrong.py runs over the sets bench_false_accepts builds wrong candidates for (corpus
and naive, issue 15's classes on the corpus only), and an unknown set or kernel is one
line, exit 2 (a benchmark is run by hand; this checks that it runs and counts)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "prove_wrong.py"


def _run(tmp_path, *args):
    env = dict(os.environ, ASMEVO_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=600, env=env)


@pytest.mark.parametrize("args, named", [(["--sets", "corpus,bogus"], "bogus"),
                                         (["--kernels", "naive/nope"], "naive/nope"),
                                         (["--sets", "corpus", "--kernels", "naive/elu"],
                                          "naive/elu")])
def test_an_unknown_set_or_kernel_is_one_line_and_exit_2(tmp_path, args, named):
    pytest.importorskip("z3", reason="the prover is an optional extra (z3-solver)")
    r = _run(tmp_path, *args)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and named in lines[0], r.stderr[-1000:]


def test_a_naive_kernel_runs_with_the_launch_classes_only(tmp_path):
    pytest.importorskip("z3", reason="the prover is an optional extra (z3-solver)")
    r = _run(tmp_path, "--kernels", "naive/elu", "--classes", "grid_dimension,neg_inf_constant")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("naive/elu")]
    assert [row[1] for row in rows] == ["grid_dimension"]       # neg_inf_constant: corpus only
    assert rows[0][3] == "refuted" and rows[0][4] == "replayed"
    figs = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln and " " not in ln)
    assert figs["built"] == "1" and figs["refuted"] == "1" and figs["not_refuted"] == "0"
