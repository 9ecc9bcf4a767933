import os

import pytest

from asmevo.targets.amdgpu import toolchain as tcmod
from asmevo.targets.amdgpu.toolchain import TOOLS, ToolchainError, find_toolchain


def _clear():
    tcmod._find.cache_clear()


def test_finds_a_toolchain_with_every_tool():
    tc = find_toolchain()
    for t in TOOLS:
        assert tc.path(t).exists(), t
    assert tc.version[0].isdigit()


def test_env_var_takes_precedence(monkeypatch, tmp_path):
    real = find_toolchain()
    for t in TOOLS:
        os.symlink(real.path(t), tmp_path / t)
    monkeypatch.setenv("ASMEVO_LLVM_DIR", str(tmp_path))
    _clear()
    try:
        assert find_toolchain().bin_dir == tmp_path
    finally:
        _clear()


def test_env_var_missing_tools_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ASMEVO_LLVM_DIR", str(tmp_path))
    _clear()
    try:
        with pytest.raises(ToolchainError) as ei:
            find_toolchain()
    finally:
        _clear()
    msg = str(ei.value)
    assert "ASMEVO_LLVM_DIR" in msg and "llvm-mc" in msg and "apt-get install" in msg


def test_no_toolchain_anywhere(monkeypatch, tmp_path):
    monkeypatch.delenv("ASMEVO_LLVM_DIR", raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    monkeypatch.setattr(tcmod, "_candidates", lambda: [])
    _clear()
    try:
        with pytest.raises(ToolchainError, match="no LLVM toolchain"):
            find_toolchain()
    finally:
        _clear()


def test_tool_failure_carries_stderr_and_no_shell(tmp_path):
    tc = find_toolchain()
    bad = tmp_path / "bad; echo pwned.s"
    bad.write_text("v_bogus_instruction v0\n")
    with pytest.raises(ToolchainError) as ei:
        tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", "--mcpu=gfx942", str(bad)])
    assert "invalid instruction" in str(ei.value) or "error" in str(ei.value)
    assert "pwned" not in str(ei.value).replace(str(bad), "")
