import os

import pytest

from asmevo.targets.amdgpu import toolchain as tcmod
from asmevo.targets.amdgpu.toolchain import TOOLS, ToolchainError, find_toolchain
from tests.conftest import ROOT, corpus_objects


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
    assert "llvm-mc failed (exit 1)" in str(ei.value)
    assert "error: invalid instruction" in ei.value.detail    # llvm-mc's own stderr, kept
    assert "pwned" not in str(ei.value).replace(str(bad), "")


# --- per-processor lookup ---------------------------------------------------------

GFX950_CO = ROOT / "tests" / "data" / "aiter_gfx950" / \
    "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128.co"


def _by_knowledge():
    """(an installed LLVM that knows gfx950, one that does not), either may be None."""
    found = tcmod.installed()
    new = next((t for t in found if t.knows("gfx950")), None)
    old = next((t for t in found if not t.knows("gfx950")), None)
    return new, old


def _only(monkeypatch, dirs):
    monkeypatch.delenv("ASMEVO_LLVM_DIR", raising=False)
    monkeypatch.setenv("ROCM_PATH", "/nonexistent")
    monkeypatch.setattr(tcmod, "_candidates", lambda: list(dirs))
    _clear()


def test_lookup_is_per_processor(monkeypatch):
    """An LLVM that does not know gfx950 first in line still serves gfx942; gfx950
    gets the next one that knows it."""
    new, old = _by_knowledge()
    if new is None or old is None:
        pytest.skip("needs one LLVM that knows gfx950 and one that does not (setup.sh "
                    "installs 19 and 22)")
    _only(monkeypatch, [old.bin_dir, new.bin_dir])
    try:
        assert find_toolchain("gfx942") == old
        assert find_toolchain("gfx950") == new
        assert find_toolchain("gfx950").describe() == f"LLVM {new.version} ({new.bin_dir})"
    finally:
        _clear()


def test_no_llvm_for_gfx950_is_one_line_naming_what_to_install(monkeypatch):
    _, old = _by_knowledge()
    if old is None:
        pytest.skip("every installed LLVM knows gfx950")
    _only(monkeypatch, [old.bin_dir])
    try:
        with pytest.raises(ToolchainError) as ei:
            find_toolchain("gfx950")
    finally:
        _clear()
    msg = str(ei.value)
    assert "\n" not in msg and "gfx950" in msg and "llvm-22 lld-22" in msg
    assert old.describe() in msg and "ASMEVO_LLVM_DIR" in msg


def test_env_var_that_does_not_know_the_processor(monkeypatch, capsys):
    """ASMEVO_LLVM_DIR still decides, and LLVM 19 is refused for gfx950 in one line
    instead of crashing in llvm-objdump."""
    from asmevo.cli import main
    _, old = _by_knowledge()
    if old is None:
        pytest.skip("every installed LLVM knows gfx950")
    monkeypatch.setenv("ASMEVO_LLVM_DIR", str(old.bin_dir))
    _clear()
    try:
        assert main(["inspect", str(GFX950_CO)]) == 2
        assert find_toolchain("gfx942") == old
    finally:
        _clear()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"ASMEVO_LLVM_DIR={old.bin_dir}" in err and "does not know gfx950" in err


@pytest.mark.parametrize("tc", [t for t in tcmod.installed() if t.knows("gfx942")],
                         ids=lambda t: f"llvm-{t.major}")
def test_gfx942_corpus_is_byte_identical_under_every_installed_llvm(tc):
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.targets.amdgpu.roundtrip import compare
    objs = [p for p in corpus_objects() if p.name.endswith(".gfx942.co")]
    assert objs
    for p in objs:
        co = load(p)
        cmp = compare(co, load(build_program(recover(co, tc=tc), cache=False, tc=tc)))
        assert cmp.identical, (p.name, tc.describe(), [str(d) for d in cmp.differences])


def test_build_cache_keys_on_the_llvm_version(tmp_path, monkeypatch):
    from asmevo.targets.amdgpu import load, recover
    from asmevo.targets.amdgpu.assembly import to_asm
    from asmevo.targets.amdgpu.assemble import build_asm
    found = {t.version: t for t in tcmod.installed() if t.knows("gfx942")}
    if len(found) < 2:
        pytest.skip("needs two installed LLVM versions")
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    co = load(corpus_objects()[0])
    asm = to_asm(recover(co))
    outs = [build_asm(asm, co.target, section_starts={".text": co.text.addr}, tc=t)
            for t in found.values()]
    assert len(list(tmp_path.rglob("*.co"))) == len(found)   # one entry per version
    assert all(o[:4] == b"\x7fELF" for o in outs)
