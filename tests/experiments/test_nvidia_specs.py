"""The sm_90 specs stay what ``build_sm90.py`` derives from the corpus folders' specs: a
field added there (a launch family, a scalar domain, ``special = false``) reaches the NVIDIA
spec too. tri_rotary's once lacked ``special = false`` on ``positions``: the special-value
inputs indexed outside its caches and every candidate on the GPU came out nondeterministic."""
from __future__ import annotations

import importlib.util

import pytest

from tests.experiments import ROOT

SCRIPT = ROOT / "experiments" / "nvidia" / "build_sm90.py"


def _script():
    spec = importlib.util.spec_from_file_location("build_sm90", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_sm90_spec_is_its_folders_spec_written_again(tmp_path, monkeypatch):
    b = _script()
    known = dict(b.build_corpus.TRITON_SOURCES)
    committed = sorted(p.stem for p in b.SPECS_DIR.glob("*.toml"))
    assert committed and set(committed) <= set(known)
    infos = [b.built_info(k, known[k]) for k in committed]
    monkeypatch.setattr(b, "SPECS_DIR", tmp_path)
    stale = [i["folder"] for i in infos
             if b.write_spec(i).read_text() != (ROOT / "experiments" / "nvidia" / "specs"
                                                 / f"{i['folder']}.toml").read_text()]
    assert stale == [], f"run: python experiments/nvidia/build_sm90.py --specs-only ({stale})"
    assert "special = false" in (tmp_path / "tri_rotary.toml").read_text()


def test_specs_only_refuses_a_spec_without_the_generated_header(tmp_path, monkeypatch):
    b = _script()
    monkeypatch.setattr(b, "SPECS_DIR", tmp_path)
    (tmp_path / "tri_add.toml").write_text('name = "tri_add"\n')
    with pytest.raises(SystemExit, match="no generated header"):
        b.built_info("tri_add", dict(b.build_corpus.TRITON_SOURCES)["tri_add"])
