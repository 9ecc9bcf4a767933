"""The H200 search script's CPU dry run (a fake cuda device in the same process):
the config it writes, the verification worker it stands in, the result it reports."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.targets.nvidia.conftest import needs_nvdisasm, needs_ptxas

ROOT = Path(__file__).resolve().parents[3]


@needs_nvdisasm
@needs_ptxas
def test_dry_run_searches_with_the_ptx_operator_and_reports_the_best_edits(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "nvidia" / "search_h200.py"), "--fake",
         "--only", "tri_add", "--budget", "5", "--ptx", "1", "--generations", "2",
         "--population", "4", "--out", str(out), "--work", str(work)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "ptx_rebuild = 1.0" in (work / "tri_add" / "config.toml").read_text()
    doc = json.loads((out / "search_h200.json").read_text())
    (res,) = doc["kernels"] if isinstance(doc, dict) else doc
    assert "error" not in res, res.get("error")
    assert res["evaluations"] >= 1 and res["verdicts"].get("equal", 0) >= 1
    best = res["best"]
    assert len(best["notes"]) == best["edits"]
    assert res["device"] == "fake-cuda"
