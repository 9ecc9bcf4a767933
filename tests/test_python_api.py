"""docs/python_api.md's example, run as it stands in the document."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_documented_example_runs(tmp_path):
    doc = (ROOT / "docs" / "python_api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(blocks) == 1
    script = tmp_path / "example.py"
    script.write_text(blocks[0])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASMEVO_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "['asm_copy'] gfx942"
    assert lines[1].startswith("equal ") and lines[1].endswith("1.000x modeled")
    assert lines[2].startswith("stopped: ")
    assert re.match(r"\d+ individuals; best \S+ \d\.\d{4}x modeled", lines[3])
    assert "operator" in lines[4] and any("schedule" in ln for ln in lines[5:])


def test_the_api_names_the_file_on_bad_input(tmp_path):
    import pytest

    from asmevo import api
    from asmevo.errors import AsmevoError

    bad = tmp_path / "k.co"
    bad.write_bytes(b"not an ELF")
    with pytest.raises(AsmevoError, match="k.co"):
        api.load(bad)
