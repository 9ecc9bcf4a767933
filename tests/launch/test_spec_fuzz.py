"""Property test: whatever a spec file holds, ``asmevo emulate`` answers cleanly.

Committed corpus specs are mutated (keys deleted, values replaced by huge,
negative, NaN, wrongly typed, deeply nested or injected ones, unknown keys added,
the text cut short) and run through the real command in this process: it must
succeed, say "no" (exit 1), or print one line and exit 2; never a traceback, never
a hang. ``ASMEVO_EMU_MAX_WAVES`` is lowered so a mutant that is valid but large is
refused at once instead of emulated for seconds.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import KERNELS
from tests.hostile import checked, damaged_text, fuzz_settings, mutated, toml_text

BASES = ["vector_add", "asm_copy", "int_hash", "cross_entropy", "tri_softmax", "transpose"]
SETTINGS = fuzz_settings(60)


def base_doc(name: str) -> dict:
    """The corpus spec with absolute code object paths (it is written elsewhere)."""
    folder = KERNELS / name
    doc = tomllib.loads((folder / "spec.toml").read_text())
    doc["code_object"] = str((folder / doc["code_object"]).resolve())
    doc["code_objects"] = {k: str((folder / v).resolve())
                           for k, v in doc.get("code_objects", {}).items()}
    return doc


@pytest.fixture(scope="module", autouse=True)
def _small_emulations():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASMEVO_EMU_MAX_WAVES", "256")
        yield


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("specfuzz")


def _emulate(workdir: Path, text: str):
    spec = workdir / "spec.toml"
    spec.write_text(text)
    return checked(["emulate", str(spec), "--size", "small"])


@pytest.mark.timeout(900, method="thread")   # also ends a hang inside C code
@pytest.mark.parametrize("name", BASES)
@SETTINGS
@given(data=st.data())
def test_mutated_corpus_spec(workdir, name, data):
    doc = data.draw(mutated(base_doc(name)))
    _emulate(workdir, toml_text(doc))


@pytest.mark.timeout(300, method="thread")   # also ends a hang inside C code
@fuzz_settings(40)
@given(data=st.data())
def test_damaged_spec_text(workdir, data):
    text = data.draw(damaged_text(toml_text(base_doc("vector_add"))))
    _emulate(workdir, text)


def test_the_unmutated_bases_run(workdir):
    for name in BASES:
        assert _emulate(workdir, toml_text(base_doc(name))).code == 0, name
