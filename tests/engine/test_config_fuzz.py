"""Property test: whatever a run or ablation config holds, the command answers cleanly.

``experiments/quickstart.toml``, the engine tests' small config and an ablation
config are mutated (keys deleted, values replaced by huge, negative, NaN, wrongly
typed, deeply nested or injected ones, unknown keys, the text cut short) and run
through ``asmevo run`` / ``asmevo ablate`` in this process: one line and exit 2,
or success; never a traceback, never a hang. What is tested is everything the
command does with the file, up to the search: parsing, validation, the evaluator
(spec and K0 loaded), the run directory and its archive. The search itself is
left out (``_drive`` and ``run_cells`` return at once), since a valid mutant may
ask for a long one; tests/engine/test_engine.py and test_ablate.py run searches.
"""
from __future__ import annotations

import tomllib
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.engine.helpers import KERNELS, ROOT, config_text
from tests.ablate.test_ablate import TINY
from tests.hostile import checked, damaged_text, fuzz_settings, mutated, toml_text

SETTINGS = fuzz_settings(60)


def _quickstart() -> dict:
    doc = tomllib.loads((ROOT / "experiments" / "quickstart.toml").read_text())
    doc["run"]["spec"] = str(ROOT / "experiments" / doc["run"]["spec"])
    return doc


BASES = {"quickstart": _quickstart(), "small": tomllib.loads(config_text(n_jobs=2))}


@pytest.fixture(scope="module", autouse=True)
def _no_search():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("asmevo.engine.command._drive", lambda run, quiet=False: 0)
        mp.setattr("asmevo.ablate.cells.run_cells", lambda cells, out, jobs, done: [])
        yield


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("configfuzz")


def _run(workdir: Path, text: str):
    d = workdir / uuid.uuid4().hex
    d.mkdir()
    cfg = d / "c.toml"
    cfg.write_text(text)
    outcome = checked(["run", str(cfg), "--run-dir", str(d / "run"), "--quiet"])
    assert outcome.code != 1
    if outcome.code == 2:
        assert str(cfg) in outcome.error_lines[0] or "spec" in outcome.error_lines[0], \
            outcome.error_lines
        assert not (d / "run").exists(), "a refused config left a run directory"
    return outcome


@pytest.mark.timeout(900, method="thread")   # also ends a hang inside C code
@pytest.mark.parametrize("name", BASES)
@SETTINGS
@given(data=st.data())
def test_mutated_run_config(workdir, name, data):
    _run(workdir, toml_text(data.draw(mutated(BASES[name]))))


@pytest.mark.timeout(300, method="thread")   # also ends a hang inside C code
@fuzz_settings(40)
@given(data=st.data())
def test_damaged_config_text(workdir, data):
    _run(workdir, data.draw(damaged_text(toml_text(BASES["small"]))))


@pytest.mark.timeout(900, method="thread")   # also ends a hang inside C code
@SETTINGS
@given(data=st.data())
def test_mutated_ablation_config(workdir, data):
    d = workdir / uuid.uuid4().hex
    d.mkdir()
    doc = tomllib.loads(TINY) | {}
    doc["ablation"]["corpus"] = str(KERNELS)
    cfg = d / "ab.toml"
    cfg.write_text(toml_text(data.draw(mutated(doc))))
    outcome = checked(["ablate", str(cfg), "--out", str(d / "out"), "--jobs", "1",
                       "--no-plots"])
    if outcome.code == 2:
        assert not (d / "out").exists(), "a refused ablation left its output directory"


def test_the_unmutated_bases_are_accepted(workdir):
    for name, doc in BASES.items():
        assert _run(workdir, toml_text(doc)).code == 0, name
