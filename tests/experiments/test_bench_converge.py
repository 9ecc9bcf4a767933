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
