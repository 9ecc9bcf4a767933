"""The command's conventions: ``--version``, a reader that goes away, a missing extra."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import asmevo
from tests.conftest import KERNELS

ROOT = Path(__file__).resolve().parents[1]


def asmevo_cmd(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "asmevo", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kw)


def test_version():
    r = asmevo_cmd("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"asmevo {asmevo.__version__}"


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """The command with its stdout a pipe whose reader has already gone (``| head -0``):
    every write it makes fails with EPIPE, whatever the size of its output."""
    r, w = os.pipe()
    os.close(r)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-m", "asmevo", *args], env=env, cwd=ROOT,
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [
    ("profile", str(KERNELS / "matmul_tiled"), "--top", "3"),
    ("inspect", str(KERNELS / "matmul_tiled" / "matmul_tiled.gfx942.co")),
    ("--help",),
    ("--version",),
], ids=lambda a: a[0])
def test_a_reader_that_goes_away_ends_the_command_quietly(args):
    r = into_closed_pipe(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr[-2000:]


def test_profile_piped_into_head_exits_0():
    """The shell's own pipeline, as the README's users type it (bash's pipefail: the exit
    status is asmevo's)."""
    cmd = (f"set -o pipefail; {sys.executable} -m asmevo profile "
           f"{KERNELS / 'matmul_tiled'} --top 40 | head -1")
    r = subprocess.run(["bash", "-c", cmd], env={**os.environ, "PYTHONPATH": str(ROOT)},
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("matmul_tiled [small]") and r.stderr == ""


def test_a_missing_extra_is_one_line_naming_it():
    from asmevo.cli import missing_extra
    line = missing_extra(ModuleNotFoundError("No module named 'anthropic'", name="anthropic"))
    assert "'llm' extra" in line and "asmevo[llm]" in line
    assert "'hip' extra" in missing_extra(ModuleNotFoundError("x", name="hip"))
    assert "'cuda' extra" in missing_extra(ModuleNotFoundError("x", name="cuda.bindings"))
    assert missing_extra(ModuleNotFoundError("x", name="numpy")) is None   # a bug: traceback


def test_an_llm_run_without_the_llm_extra_says_which_extra(tmp_path):
    """The SDKs are the ``llm`` extra: a run that names an LLM operator where neither is
    installed (hidden here) ends in one line naming the extra, exit 2."""
    cfg = (ROOT / "experiments" / "quickstart.toml").read_text()
    cfg = cfg.replace('spec = "kernels/matmul_tiled"',
                      f'spec = "{KERNELS / "matmul_tiled"}"')
    (tmp_path / "llm.toml").write_text(cfg.replace("[budget]", "[operators]\nllm_mutate = 1.0\n\n"
                                                               "[budget]"))
    code = ("import sys; sys.modules['anthropic'] = None; sys.modules['openai'] = None; "
            "from asmevo.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "dummy"}
    r = subprocess.run([sys.executable, "-c", code, "run", str(tmp_path / "llm.toml"),
                        "--run-dir", str(tmp_path / "run")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("asmevo run: error: this needs the "
                                                        "'llm' extra")
    assert "Traceback" not in r.stderr
