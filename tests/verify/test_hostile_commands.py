"""``spec check`` and ``candidate`` on hostile inputs: one line, exit 2, nothing written.

``spec check`` on a FIFO waited forever for a writer, and on deeply nested TOML
printed a traceback of up to 3,000 lines; ``candidate`` edits with deep JSON, a
5,000-digit integer or ``Infinity`` gave tracebacks, and a float window bound was
silently truncated. Every input is now read as a regular file within the limits
(FIFOs and devices refused before a read), TOML nesting is measured before
parsing (``ASMEVO_MAX_TOML_DEPTH``), and an edit list is JSON within
``ASMEVO_MAX_JSON_DEPTH`` whose every field has its type and range.
"""
from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import KERNELS
from tests.hostile import checked

SPEC = KERNELS / "asm_copy" / "spec.toml"


@pytest.fixture
def spec_dir(tmp_path):
    for name in ("spec.toml", "asm_copy.gfx942.co", "reference.py"):
        shutil.copy(KERNELS / "asm_copy" / name, tmp_path / name)
    return tmp_path


def test_spec_check_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    out = checked(["spec", "check", str(fifo)], seconds=10)
    assert out.code == 2 and out.error_lines == [
        f"asmevo spec: error: {fifo}: cannot read spec (a FIFO, not a regular file)"]


def test_spec_check_refuses_a_device():
    out = checked(["spec", "check", "/dev/zero"], seconds=10)
    assert out.error_lines == [
        "asmevo spec: error: /dev/zero: cannot read spec (a character device, not a regular "
        "file)"]


@pytest.mark.parametrize("deep, levels", [
    ("x = " + "[" * 3000 + "]" * 3000, "3,000"),
    ("x = " + "{a = " * 3000 + "1" + "}" * 3000, "3,000"),
    ("x = " + "[" * 33 + "]" * 33, "33"),
    (".".join(["x"] * 40) + " = 1", "40"),                   # dotted keys: no brackets
], ids=["arrays", "inline-tables", "just-over", "dotted-keys"])
def test_spec_check_on_deep_toml_is_one_line(spec_dir, deep, levels):
    spec = spec_dir / "spec.toml"
    spec.write_text(deep + "\n" + spec.read_text())
    out = checked(["spec", "check", str(spec)], seconds=10)
    assert out.code == 2 and out.error_lines == [
        f"asmevo spec: error: {spec}: spec nesting: {levels} levels of nesting is over the "
        "limit of 32 (set ASMEVO_MAX_TOML_DEPTH to raise it)"]


EDITS = {
    "deep": ("[" * 100_000 + "]" * 100_000,
             "edit list nesting: 100,000 levels of nesting is over the limit of 64 "
             "(set ASMEVO_MAX_JSON_DEPTH to raise it)"),
    "huge-int": ('[{"function": "asm_copy", "start": 1' + "0" * 5000 + ', "end": 2, "lines": []}]',
                 "edit list: an integer of 5,001 digits (at most 20)"),
    "infinity": ('[{"function": "asm_copy", "start": Infinity, "end": 2, "lines": []}]',
                 "edit list: Infinity is not a JSON number"),
    "nan": ('[{"function": "asm_copy", "start": 0, "end": NaN, "lines": []}]',
            "edit list: NaN is not a JSON number"),
    "1e999": ('[{"function": "asm_copy", "start": 1e999, "end": 2, "lines": []}]',
              "edit list: number 1e999 is out of range"),
    "float": ('[{"function": "asm_copy", "start": 1e300, "end": 2, "lines": []}]',
              "edit 0: start must be an integer in [0, 2,147,483,647], not 1e+300"),
    "bool": ('[{"function": "asm_copy", "start": true, "end": 2, "lines": []}]',
             "edit 0: start must be an integer in [0, 2,147,483,647], not True"),
    "negative": ('[{"function": "asm_copy", "start": -1, "end": 2, "lines": []}]',
                 "edit 0: start must be an integer in [0, 2,147,483,647], not -1"),
    "too-big": ('[{"function": "asm_copy", "start": 0, "end": 4294967296, "lines": []}]',
                "edit 0: end must be an integer in [0, 2,147,483,647], not 4294967296"),
    "lines": ('[{"function": "asm_copy", "start": 0, "end": 1, "lines": [1, 2]}]',
              "edit 0: lines must hold strings only, not 1"),
    "function": ('[{"function": ["x"], "start": 0, "end": 1, "lines": []}]',
                 "edit 0: function must be a str, not list of 1"),
    "descriptor": ('[{"function": "asm_copy", "start": 0, "end": 1, "lines": [], '
                   '"descriptor": [["x", -1]]}]',
                   "edit 0: descriptor 'x' must be an integer in [0, 4,294,967,295], not -1"),
    "missing": ('[{"function": "asm_copy", "start": 0, "lines": []}]', "edit 0: edit has no 'end'"),
    "not-an-object": ('[' + '"x' * 1 + '"]', "edit 0: an edit is an object, not 'x'"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_candidate_on_a_hostile_edit_list_is_one_line_and_writes_nothing(tmp_path, case):
    text, message = EDITS[case]
    edits, out_path = tmp_path / "edits.json", tmp_path / "K1.co"
    edits.write_text(text)
    out = checked(["candidate", str(SPEC), str(edits), "--out", str(out_path)], seconds=20)
    assert out.code == 2 and out.error_lines == [
        f"asmevo candidate: error: {edits}: {message}"]
    assert not out_path.exists()


def test_candidate_refuses_a_fifo_edit_list(tmp_path):
    fifo = tmp_path / "edits.json"
    os.mkfifo(fifo)
    out = checked(["candidate", str(SPEC), str(fifo)], seconds=10)
    assert out.error_lines == [f"asmevo candidate: error: {fifo}: cannot read edit list "
                               "(a FIFO, not a regular file)"]
