"""The corrupt-file corpus (corrupt_corpus.py) and special files through the CLI.

For every variant: exit code 0, 1 or 2; on exit 2 exactly one stderr line, naming
the file; never an exception out of ``main`` (a traceback in a real run); each
command within a time bound. Special files (a FIFO with no writer, /dev/zero, a
directory, a link to a device) are refused at once in a real process.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from asmevo.cli import main
from tests.conftest import ROOT
from tests.targets.amdgpu.corrupt_corpus import variants

BOUND_S = 60          # per command and file; the slowest variant here takes about 1 s


@pytest.mark.timeout(1800)
def test_every_corrupt_variant_is_a_clean_answer(tmp_path, capsys):
    outcomes: Counter = Counter()
    slowest = (0.0, "")
    for i, (name, data) in enumerate(variants()):
        f = tmp_path / f"v{i:03d}.co"
        f.write_bytes(data)
        for command in ("roundtrip", "inspect") if i % 3 == 0 else ("roundtrip",):
            t0 = time.monotonic()
            try:
                rc = main([command, str(f)])
            except Exception as exc:           # would be a traceback in a real run
                pytest.fail(f"{name}: asmevo {command} raised {type(exc).__name__}: {exc}")
            dt = time.monotonic() - t0
            err = capsys.readouterr().err
            assert rc in (0, 1, 2), (name, command, rc)
            if rc == 2:
                assert err.count("\n") == 1 and str(f) in err, (name, command, err)
                assert err.startswith(f"asmevo {command}: error: ")
            else:
                assert err == "", (name, command, err)
            assert dt < BOUND_S, (name, command, dt)
            slowest = max(slowest, (dt, f"{name} {command}"))
            outcomes[command, rc] += 1
    total = sum(n for (c, _), n in outcomes.items() if c == "roundtrip")
    assert total >= 400
    assert outcomes["roundtrip", 2] >= 250 and outcomes["roundtrip", 0] >= 30, outcomes
    print(f"corrupt corpus: {total} variants, {dict(outcomes)}; slowest {slowest[0]:.2f}s "
          f"({slowest[1]})")


def _asmevo(*args, timeout=60):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "asmevo", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_special_files_are_refused_at_once_in_a_real_process(tmp_path):
    fifo = tmp_path / "fifo.co"
    os.mkfifo(fifo)
    link = tmp_path / "zero.co"
    link.symlink_to("/dev/zero")
    (tmp_path / "dir.co").mkdir()
    cases = {fifo: "a FIFO", "/dev/zero": "a character device", link: "a character device",
             tmp_path / "dir.co": "a directory", tmp_path / "missing.co": "No such file"}
    for path, why in cases.items():
        for command in ("inspect", "roundtrip"):
            t0 = time.monotonic()
            proc = _asmevo(command, path, timeout=60)
            assert time.monotonic() - t0 < 30
            assert proc.returncode == 2, (path, command, proc.stderr)
            assert proc.stderr == (f"asmevo {command}: error: {path}: cannot read file "
                                   f"({why}{', not a regular file' if why[0] == 'a' else ''}"
                                   + (" or directory" if why == "No such file" else "") + ")\n")


def test_the_size_limit_names_its_knob(tmp_path):
    big = tmp_path / "big.co"
    big.write_bytes(b"\x7fELF" + bytes(4096))
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASMEVO_MAX_INPUT_BYTES="1000")
    proc = subprocess.run([sys.executable, "-m", "asmevo", "inspect", str(big)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "ASMEVO_MAX_INPUT_BYTES" in proc.stderr
    assert "4,100 bytes" in proc.stderr and str(big) in proc.stderr


def test_a_batch_of_variants_in_a_real_process_has_no_traceback(tmp_path):
    files = []
    for i, (_, data) in enumerate(variants()):
        if i % 40 == 0:
            files.append(tmp_path / f"v{i:03d}.co")
            files[-1].write_bytes(data)
    proc = _asmevo("roundtrip", *files, timeout=600)
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr
    for line in proc.stderr.splitlines():
        assert line.startswith("asmevo roundtrip: error: ") and any(str(f) in line for f in files)
