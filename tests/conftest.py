"""Shared fixtures: the committed kernel corpus and the LLVM toolchain."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "experiments" / "kernels"


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


HAS_MATPLOTLIB = _has_matplotlib()     # the plot extra is optional: tests say both ways


def corpus_objects() -> list[Path]:
    """Every committed code object (gfx942 and gfx90a), in a stable order."""
    return sorted(KERNELS.glob("*/*.co"))


def corpus_specs() -> list[Path]:
    return sorted(KERNELS.glob("*/spec.toml"))


@pytest.fixture(scope="session")
def toolchain():
    from asmevo.targets.amdgpu.toolchain import find_toolchain
    return find_toolchain()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Builds go to a per-session cache, never the user's."""
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
