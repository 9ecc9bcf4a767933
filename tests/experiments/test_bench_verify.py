"""bench_verify.py refuses a spec or kernel it cannot verify with one line naming the file
and the problem, and exit 2, instead of a traceback (the timing itself is a benchmark,
run by hand)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "bench_verify.py"
SOFTMAX = ROOT / "experiments" / "kernels" / "softmax"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=120)


def _one_line(r) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_missing_spec(tmp_path):
    line = _one_line(_run("--spec", str(tmp_path / "nothing"), "--repeat", "1"))
    assert str(tmp_path / "nothing") in line and "cannot read spec" in line


def test_truncated_code_object(tmp_path):
    spec = tmp_path / "softmax"
    shutil.copytree(SOFTMAX, spec)
    co = spec / "softmax.gfx942.co"
    co.write_bytes(co.read_bytes()[:300])
    line = _one_line(_run("--spec", str(spec), "--repeat", "1"))
    assert str(co) in line


def test_unknown_size_and_bad_repeat():
    line = _one_line(_run("--size", "huge", "--repeat", "1"))
    assert "no size 'huge'" in line
    line = _one_line(_run("--repeat", "0"))
    assert "--repeat must be >= 1" in line
