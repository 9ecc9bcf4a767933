"""Edit lines: printable ASCII only, no privileged instruction added on any path,
and every tool call bounded (process group killed on timeout)."""
from __future__ import annotations

import os
import time

import pytest

from asmevo import process
from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.targets import AmdgpuTarget
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.sanitize import UnsafeEdit, check_introduced, check_line, encode_lines
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
from asmevo.verify.pipeline import candidate
from tests.conftest import KERNELS
from tests.targets.amdgpu.test_roundtrip import TOP_SGPR_KERNEL

ASM_COPY = KERNELS / "asm_copy" / "asm_copy.gfx942.co"
GFX942 = TargetId("gfx942", xnack="any", sramecc="any")

NON_ASCII = ["s_mov_b32 s0, \u0455",            # Cyrillic s: llvm-mc 19 spun 120 s on it
             "s_mov_b32 s0, \u00e9", "v_mov_b32 v0, \u03b1", "s_mov_b32\u00a0s0, 0",
             "s_mov_b32 s0, \uff11", "s_nop\u200b 0", "s_nop 0\u202e", "s_mov_b32 s0, 0\x0b",
             "s_mov_b32 s0, 0\x0c", "s_nop \x1b[2J0"]


@pytest.mark.parametrize("line", NON_ASCII)
def test_non_ascii_and_control_characters_are_refused_before_any_tool(line, monkeypatch):
    ran = []
    monkeypatch.setattr(process, "run_tool", lambda *a, **k: ran.append(a))
    with pytest.raises(UnsafeEdit, match=r"U\+[0-9A-F]{4} is not printable ASCII"):
        check_line(line)
    t0 = time.monotonic()
    with pytest.raises(UnsafeEdit):
        encode_lines([line], GFX942)
    assert time.monotonic() - t0 < 1 and ran == []


def test_ascii_operands_still_pass():
    assert check_line("v_add_f32_e32 v1, 0x3f800000, v2") == "v_add_f32_e32 v1, 0x3f800000, v2"
    assert check_line("s_waitcnt\tvmcnt(0) lgkmcnt(0)") == "s_waitcnt vmcnt(0) lgkmcnt(0)"
    assert check_line("ds_read_b32 v0, v1 offset:16") == "ds_read_b32 v0, v1 offset:16"


PRIVILEGED_LINES = ["s_sethalt 1", "s_setreg_b32 hwreg(HW_REG_MODE), s0",
                    "s_setreg_imm32_b32 hwreg(HW_REG_MODE), 0", "s_dcache_wb", "s_dcache_inv",
                    "s_icache_inv", "s_trap 2", "s_sendmsg sendmsg(MSG_INTERRUPT)",
                    "s_setpc_b64 s[0:1]", "s_getpc_b64 s[0:1]", "buffer_wbl2", "buffer_inv sc1",
                    "buffer_wbinvl1_vol", "s_setkill 1", "s_ttracedata"]


@pytest.mark.parametrize("line", PRIVILEGED_LINES)
def test_plain_edits_may_not_add_a_privileged_instruction(line):
    """The rule and replay path refuse what the LLM path refuses: the candidate is
    an 'unsafe' verdict, never a build that the emulator could call equal."""
    co = load(ASM_COPY)
    program = recover(co)
    fn = program.functions[0]
    edit = Edit(fn.name, 1, 1, (line,))
    with pytest.raises(UnsafeEdit, match="is not allowed in an edit"):
        apply_edit(program, edit)
    prog, data, verdict = candidate(AmdgpuTarget(), program, (edit,), co)
    assert data is None and verdict.status == "unsafe"


DCACHE_KERNEL = TOP_SGPR_KERNEL.replace("  s_mov_b32 s101, 0\n  s_mov_b64 vcc, 0\n",
                                        "  s_mov_b32 s2, 0\n  s_dcache_wb\n  s_mov_b32 s3, 1\n")


def test_k0s_own_privileged_instruction_may_move_but_not_multiply():
    assert "s_dcache_wb" in DCACHE_KERNEL
    program = recover(load(build_asm(DCACHE_KERNEL, GFX942)))
    texts = [i.text for i in program.functions[0].instructions]
    assert texts[1] == "s_dcache_wb"
    moved = apply_edit(program, Edit("hi", 0, 3, (texts[2], "s_dcache_wb", texts[0])))
    assert [i.text for i in moved.functions[0].instructions][:3] == [texts[2], "s_dcache_wb",
                                                                      texts[0]]
    with pytest.raises(UnsafeEdit, match="s_dcache_wb is not allowed"):
        apply_edit(program, Edit("hi", 0, 3, (texts[0], "s_dcache_wb", "s_dcache_wb")))
    with pytest.raises(UnsafeEdit, match="s_dcache_inv is not allowed"):
        apply_edit(program, Edit("hi", 1, 2, ("s_dcache_inv",)))
    with pytest.raises(UnsafeEdit):       # a window without it cannot take it either
        check_introduced(["s_dcache_wb"], [texts[0]])


def test_a_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    t0 = time.monotonic()
    with pytest.raises(process.subprocess.TimeoutExpired):
        process.run_tool(["/bin/sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"], timeout=1)
    assert time.monotonic() - t0 < 10
    child = int(pidfile.read_text())
    for _ in range(100):                  # the grandchild is gone (or a zombie being reaped)
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"grandchild {child} survived the timeout")


def test_tool_limits_scale_with_input_and_name_their_knob(monkeypatch, tmp_path):
    assert process.time_limit(10 << 20) > process.time_limit(1 << 20) > process.time_limit(0)
    big = tmp_path / "big.s"
    big.write_bytes(b"s_nop 0\n" * 100_000)
    assert process.input_bytes(["--mcpu=gfx942", str(big), "-o", str(tmp_path / "x")],
                               b"abc") == 800_003
    monkeypatch.setenv("ASMEVO_TOOL_TIMEOUT_SCALE", "0.00001")
    tc = find_toolchain()
    with pytest.raises(ToolchainError) as ei:
        tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", "--mcpu=gfx942", str(big)])
    msg = ei.value.message
    assert "llvm-mc timed out" in msg and "ASMEVO_TOOL_TIMEOUT_SCALE" in msg
    assert "800,000 bytes of input" in msg and "\n" not in msg
    monkeypatch.setenv("ASMEVO_TOOL_TIMEOUT_SCALE", "-1")
    with pytest.raises(AsmevoError, match="ASMEVO_TOOL_TIMEOUT_SCALE='-1' is not a positive"):
        process.time_limit(0)


def test_tool_failures_are_one_line_with_the_whole_text_kept(tmp_path):
    src = tmp_path / "bad.s"
    src.write_text("v_bogus v0\n" * 20)
    with pytest.raises(ToolchainError) as ei:
        find_toolchain().run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", "--mcpu=gfx942", str(src)])
    assert "\n" not in ei.value.message and "error: invalid instruction" in ei.value.message
    assert "more lines: --verbose" in ei.value.message
    assert ei.value.detail.count("error: invalid instruction") == 20
    assert os.path.basename(str(src)) in ei.value.message
