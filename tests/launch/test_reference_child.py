"""A spec's reference.py runs in a child process, with a time and a memory limit.

reference.py is code the user trusts (a spec is as trusted as a build script),
yet it never runs inside asmevo: a forked child imports and calls it, under
``ASMEVO_REFERENCE_SECONDS`` and ``ASMEVO_REFERENCE_MEMORY_BYTES``. A reference
that hangs, eats memory, raises, dies or returns garbage is one SpecError naming
the file (``spec check`` and ``emulate --check``: one line, exit 2), and the
parent process never imports it.
"""
from __future__ import annotations

import shutil
import sys
import time

import numpy as np
import pytest

from asmevo.launch.spec import SpecError, load_spec
from tests.conftest import KERNELS
from tests.hostile import checked, run_cli

ARGS = {"src": np.arange(8, dtype=np.int32), "dst": np.zeros(8, np.int32), "n": 5}


def spec_with(tmp_path, reference: str):
    for name in ("spec.toml", "asm_copy.gfx942.co"):
        shutil.copy(KERNELS / "asm_copy" / name, tmp_path / name)
    (tmp_path / "reference.py").write_text(reference)
    return tmp_path / "spec.toml"


GOOD = """
import numpy as np
def reference(args):
    dst = np.zeros_like(args["src"])
    dst[:args["n"]] = args["src"][:args["n"]]
    return {"dst": dst}
"""

BAD = {
    "hangs": ("import time\ndef reference(args):\n    time.sleep(60)\n",
              "reference.py ran past 1 s (set ASMEVO_REFERENCE_SECONDS to allow more)"),
    "hangs-on-import": ("import time\ntime.sleep(60)\ndef reference(args):\n    return {}\n",
                        "reference.py ran past 1 s (set ASMEVO_REFERENCE_SECONDS to allow more)"),
    "eats-memory": ("def reference(args):\n    x = bytearray(1 << 33)\n    return {}\n",
                    "reference.py failed: MemoryError:  (it may use 268,435,456 bytes more "
                    "than asmevo: set ASMEVO_REFERENCE_MEMORY_BYTES to allow more)"),
    "raises": ("def reference(args):\n    return 1 / 0\n",
               "reference.py failed: ZeroDivisionError: division by zero"),
    "no-function": ("x = 1\n", "reference.py failed: LookupError: no function 'reference'"),
    "not-a-dict": ("def reference(args):\n    return [1, 2]\n",
                   "reference.py failed: TypeError: returns list, not a dict of buffer names "
                   "to arrays"),
    "objects": ("def reference(args):\n    return {'dst': [object()]}\n",
                "reference.py failed: TypeError: returns object values for 'dst', not numbers"),
    "raises-on-import": ("import json\njson.loads('{')\n",
                         "reference.py failed: JSONDecodeError: Expecting property name "
                         "enclosed in double quotes: line 1 column 2 (char 1)"),
    "dies": ("import os, signal\ndef reference(args):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
             "reference.py failed: its process ended (killed by SIGKILL)"),
    "exits": ("import os\ndef reference(args):\n    os._exit(3)\n",
              "reference.py failed: its process ended (exit status 3)"),
}


@pytest.fixture(autouse=True)
def _limits(monkeypatch):
    monkeypatch.setenv("ASMEVO_REFERENCE_SECONDS", "1")
    monkeypatch.setenv("ASMEVO_REFERENCE_MEMORY_BYTES", str(256 << 20))


def test_the_reference_runs_in_a_child_and_its_arrays_come_back(tmp_path):
    spec = load_spec(spec_with(tmp_path, GOOD + "\nimport sys\nsys.modules['pwned'] = 1\n"))
    out = spec.expected({k: (v.copy() if isinstance(v, np.ndarray) else v)
                         for k, v in ARGS.items()})
    assert list(out) == ["dst"] and out["dst"].tolist() == [0, 1, 2, 3, 4, 0, 0, 0]
    assert out["dst"].dtype == np.int32
    assert spec.reference()(ARGS)["dst"].tolist() == out["dst"].tolist()
    assert "pwned" not in sys.modules and not any(m.startswith("asmevo_ref_")
                                                  for m in sys.modules)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_reference_is_one_spec_error(tmp_path, case):
    source, message = BAD[case]
    spec = load_spec(spec_with(tmp_path, source))
    t0 = time.monotonic()
    with pytest.raises(SpecError) as err:
        spec.expected(ARGS)
    assert time.monotonic() - t0 < 1 + 1.5
    assert err.value.message == message and err.value.path == str(tmp_path / "reference.py")


@pytest.mark.parametrize("case", ["hangs-on-import", "no-function", "raises-on-import"])
def test_spec_check_names_the_reference_in_one_line(tmp_path, case):
    """``spec check`` loads the reference (in the child) as its last step: a problem line
    like every other it finds, exit 2."""
    path = spec_with(tmp_path, BAD[case][0])
    out = run_cli(["spec", "check", str(path)], seconds=10)
    assert not out.hung and out.escaped is None and out.stderr == ""
    assert out.code == 2 and out.stdout.splitlines() == [f"{path}: {BAD[case][1]}"]


def test_spec_check_of_a_good_reference_is_ok(tmp_path):
    path = spec_with(tmp_path, GOOD)
    assert checked(["spec", "check", str(path)], seconds=20).stdout.endswith(f"{path}: ok\n")
