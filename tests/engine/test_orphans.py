"""After ``kill -9`` of ``asmevo run``, none of its processes stays alive.

The run is started in its own session with a tag in its environment; every
process it starts inherits the tag (loky workers, loky's resource tracker, the
forked isolation child of each candidate). Only the session leader is killed,
as a user's ``kill -9 PID`` does; then no tagged process may be alive a few
seconds later.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.engine.helpers import KERNELS, ROOT

GRACE_S = 5.0


def tagged(tag: str) -> list[tuple[int, str]]:
    """(pid, command) of every live process whose environment carries ``tag``."""
    needle = f"ASMEVO_ORPHAN_TAG={tag}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle not in (d / "environ").read_bytes().split(b"\0"):
                continue
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            out.append((int(d.name), cmd[:120]))
    return out


def _config(tmp: Path, evaluator: str) -> Path:
    cfg = tmp / "c.toml"
    cfg.write_text(textwrap.dedent(f"""\
        [run]
        name = "orphans"
        seed = 3
        spec = "{KERNELS / 'asm_copy'}"
        size = "small"
        evaluator = "{evaluator}"

        [engine]
        islands = 2
        population = 6
        generations = 200
        migration_interval = 3
        tournament = 2

        [operators]
        nop_remove = 1.0
        swap_adjacent = {{ weight = 2.0, tries = 8 }}

        [parallel]
        n_jobs = 2
        """))
    return cfg


@pytest.mark.parametrize("evaluator, after_lines", [
    ("verify", 1),                 # mid-generation 1: forked isolation children in flight
    ("verify", 3),
    ("instruction-count", 2),      # loky workers only, busy building
], ids=["verify-gen1", "verify-gen3", "instruction-count"])
def test_sigkill_of_run_leaves_no_process_behind(tmp_path, evaluator, after_lines):
    tag = uuid.uuid4().hex
    env = os.environ | {"PYTHONPATH": str(ROOT), "ASMEVO_ORPHAN_TAG": tag}
    proc = subprocess.Popen([sys.executable, "-m", "asmevo.cli", "run",
                             str(_config(tmp_path, evaluator)), "--run-dir",
                             str(tmp_path / "run")], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        seen = 0
        for line in proc.stdout:
            seen += line.startswith("gen ")
            if seen >= after_lines:
                break
        alive = tagged(tag)
        assert proc.poll() is None, "the run ended before the kill"
        assert len(alive) >= 3, f"expected the run and its workers alive: {alive}"
        os.kill(proc.pid, signal.SIGKILL)            # the leader only, not its group
        proc.wait(timeout=10)
        deadline = time.monotonic() + GRACE_S
        while tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = tagged(tag)
        assert not left, f"alive {GRACE_S} s after SIGKILL of the run: {left}"
    finally:
        for pid, _ in tagged(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.stdout.close()
