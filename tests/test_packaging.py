"""What installs: everything under the one name asmevo (operators/ and archive/ mapped in
as asmevo.operators and asmevo.archive), no LLM SDK, hip-python or cuda binding without
its extra; and the same names from a checkout run without installing."""
from __future__ import annotations

import configparser
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from asmevo import operator as op_mod
from asmevo.layers import SOURCES

REPO = Path(__file__).resolve().parents[1]
# what `pip install asmevo` must not pull in without an extra
HEAVY = ("anthropic", "openai", "hip-python", "cuda-bindings", "cuda-python", "rocm")


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def tree_packages() -> set[str]:
    """Every folder of the source tree with an __init__.py, by its installed name."""
    out = set()
    for folder, package in SOURCES.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            out.add(".".join((package,) + parts))
    return out


def test_setup_cfg_lists_every_package_and_maps_the_source_folders():
    cfg = _setup_cfg()
    assert set(_lines(cfg.get("options", "packages"))) == tree_packages()
    mapped = dict(ln.replace(" ", "").split("=")
                  for ln in _lines(cfg.get("options", "package_dir")))
    assert mapped == {p: f for f, p in SOURCES.items() if p != f}


def test_a_checkout_without_install_imports_the_source_folders_under_asmevo():
    """The checkout first on sys.path and no editable install's finder (setuptools'
    ``__editable__`` ones dropped): asmevo/__init__.py maps operators/ and archive/ in."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.meta_path[:] = [f for f in "
            "sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]; "
            "import asmevo.archive.store, "
            "asmevo.operators; print(asmevo.archive.store.__file__); "
            "print(asmevo.operators.__file__); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('operators', 'archive')))")
    r = subprocess.run([sys.executable, "-c", code, str(REPO)], capture_output=True,
                       text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(REPO / "archive" / "store.py"),
                                     str(REPO / "operators" / "__init__.py"), "[]"]


def test_a_checkout_reads_its_operator_entry_points_from_setup_cfg():
    eps = op_mod._checkout_entry_points()
    want = dict(ln.replace(" ", "").split("=")
                for ln in _lines(_setup_cfg().get("options.entry_points", op_mod.ENTRY_POINTS)))
    assert {ep.name: ep.value for ep in eps.values()} == want
    assert all(v.startswith("asmevo.operators.") for v in want.values())


def test_stale_entry_points_of_an_old_install_give_way_to_the_checkout(monkeypatch):
    # (a name that is no module today: a rewrite of module paths leaves this test alone)
    old = [importlib.metadata.EntryPoint("basic", "operators.old_basic", op_mod.ENTRY_POINTS)]
    monkeypatch.setattr(op_mod, "_LOADED", False)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: old)
    monkeypatch.setattr(op_mod, "_checkout_entry_points", lambda: {})
    with pytest.raises(op_mod.OperatorError, match=r"old top-level names \(operators.old_basic;"
                                                   r".*reinstall"):
        op_mod._load_plugins()
    loaded = []
    ep = type("EP", (), {"load": lambda self: loaded.append(1)})()
    monkeypatch.setattr(op_mod, "_checkout_entry_points", lambda: {"asmevo.operators.basic": ep})
    op_mod._load_plugins()
    assert loaded == [1]


def _can_build() -> str | None:
    """Why a wheel cannot be built here without the network, or None."""
    try:
        found = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return "setuptools (the build backend) is not installed"
    version = tuple(int(x) for x in re.findall(r"\d+", found)[:2])
    if version < (70, 1) and importlib.util.find_spec("wheel") is None:
        return f"setuptools {found} builds wheels only with the wheel package"
    if importlib.util.find_spec("pip") is None:
        return "pip is not installed"
    return None


def test_the_wheel_has_only_asmevo_and_no_heavy_dependency(tmp_path):
    why = _can_build()
    if why:
        pytest.skip(f"no wheel build here: {why}")
    src = tmp_path / "src"                 # a copy: an in-tree build writes build/, *.egg-info
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in (*SOURCES, "setup.cfg", "pyproject.toml", "README.md"):
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=skip)
        else:
            shutil.copy2(path, src / name)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"),
                        str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [whl] = (tmp_path / "dist").glob("asmevo-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = z.read(f"{info}/METADATA").decode()
        top_level = z.read(f"{info}/top_level.txt").decode().split()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert {n.split("/")[0] for n in names} == {"asmevo", info}
    assert top_level == ["asmevo"]
    # every module of the three source folders, at its installed place
    want = {"/".join((*package.split("."), *p.relative_to(REPO / folder).parts))
            for folder, package in SOURCES.items() for p in (REPO / folder).rglob("*.py")}
    assert want - set(names) == set()
    # the data files modules read beside themselves: native.c, the timing model's tables
    from asmevo.emu.isa import native
    from asmevo.timing.parameters import PARAMS_DIR
    data = [native.SOURCE, *PARAMS_DIR.glob("*.toml")]
    assert len(data) >= 3
    missing = {"/".join(("asmevo", *f.relative_to(REPO / "asmevo").parts)) for f in data}
    assert missing - set(names) == set()
    plain = [ln.split(":", 1)[1].strip() for ln in meta.splitlines()
             if ln.startswith("Requires-Dist:") and "extra ==" not in ln]
    assert plain, meta
    heavy = [d for d in plain if re.split(r"[\s\[<>=!~;]", d)[0].lower().startswith(HEAVY)]
    assert not heavy, f"hard dependencies that belong in an extra: {heavy}"
    values = re.findall(r"^\w+\s*=\s*(\S+)", entry_points, re.M)
    assert values and all(v.startswith("asmevo.") for v in values), entry_points
