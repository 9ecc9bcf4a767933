"""Finding a ptxas by the PTX it must compile: an old ptxas first on PATH is passed over
or named in the error, never run on PTX it cannot read."""
from __future__ import annotations

import os

import pytest

from asmevo.targets.nvidia import tools

PTX_90 = ".version 9.0\n.target sm_90a\n.address_size 64\n"


def _any_ptxas():
    found = [p for n in tools.PTXAS_NAMES for p in tools.all_of(n)]
    if not found:
        pytest.skip("no ptxas on this machine")
    return found


def test_ptx_version_is_read_from_the_module():
    assert tools.ptx_version("//\n// Generated\n\n.version 9.4\n.target sm_90a\n") == (9, 4)
    with pytest.raises(tools.ToolError, match="no .version"):
        tools.ptx_version(".target sm_90a\n")


def test_a_version_no_ptxas_accepts_names_what_was_found_and_the_variable():
    found = _any_ptxas()
    with pytest.raises(tools.ToolError) as ei:
        tools.ptxas_for(PTX_90.replace("9.0", "99.9"))
    msg = ei.value.message
    assert "no ptxas accepts PTX 99.9" in msg and "ASMEVO_CUDA_BIN" in msg
    assert str(found[0]) in msg and "accepts PTX up to" in msg
    assert "\n" not in msg


def test_a_module_an_installed_ptxas_reads_finds_it(tmp_path):
    _any_ptxas()
    try:
        exe = tools.ptxas_for(PTX_90)
    except tools.ToolError as exc:
        pytest.skip(f"no ptxas here reads PTX 9.0: {exc.message}")
    src = tmp_path / "k.ptx"
    src.write_text(PTX_90)
    tools.run_exe(exe, ["--gpu-name=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")])
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


def test_asmevo_cuda_bin_comes_first(tmp_path, monkeypatch):
    real = _any_ptxas()[0]
    os.symlink(os.path.realpath(real), tmp_path / "ptxas")
    monkeypatch.setenv("ASMEVO_CUDA_BIN", str(tmp_path))
    tools.find.cache_clear()
    try:
        assert tools.all_of("ptxas")[0] == tmp_path / "ptxas"
        assert tools.find("ptxas") == tmp_path / "ptxas"
    finally:
        tools.find.cache_clear()


def test_a_missing_tool_is_one_line_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(tools, "_candidates", lambda: [])
    tools.find.cache_clear()
    try:
        with pytest.raises(tools.ToolError, match="nvdisasm not found: set ASMEVO_CUDA_BIN"):
            tools.find("nvdisasm")
        with pytest.raises(tools.ToolError, match="no ptxas found"):
            tools.ptxas_for(PTX_90)
    finally:
        tools.find.cache_clear()
