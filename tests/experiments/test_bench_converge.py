"""bench_converge.py refuses counts it cannot use with one line and exit 2 (the comparison
itself is a benchmark, run by hand; tests/emu/test_converge.py checks the mechanism)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_converge.py"


def test_bad_counts_get_one_line_and_exit_2():
    for args in (["--per-kernel", "0"], ["--fuzz", "-1"], ["--jobs", "0"]):
        r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "must be" in lines[0] and "Traceback" not in r.stderr


def test_declines_by_the_cost_test_are_counted_apart(monkeypatch):
    """check() counts a candidate the cost test declined in ``declined_cost`` as well as
    in ``declined``; with the test lifted (--no-cost-test) the same candidate converges."""
    from asmevo.emu.run import converge
    from asmevo.launch.spec import load_spec
    from experiments.bench_converge import candidates, check
    from experiments.bench_fastpath import corpus_requests
    from tests.conftest import KERNELS

    spec = load_spec(KERNELS / "softmax", "small")
    k0 = spec.code_object.read_bytes()
    cands = candidates(k0, spec.kernel, 1, 22)[:1]      # rows 0-1 swapped: converges
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 1e6)
    got = check(k0, spec, corpus_requests(spec), cands)
    assert (got["declined"], got["declined_cost"], got["bad"]) == (1, 1, [])
    monkeypatch.setattr(converge, "COMPARE_MARGIN", 0.0)
    got = check(k0, spec, corpus_requests(spec), cands)
    assert (got["converged"], got["declined_cost"], got["bad"]) == (1, 0, [])
