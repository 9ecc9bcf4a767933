"""Requests: what the model is told, and which parts are cached."""
from __future__ import annotations

from asmevo.targets.amdgpu.summary import kernel_summaries
from asmevo.operators.llm import prompts
from asmevo.operators.llm.config import LLMConfig
from tests.operators.llm.conftest import LOOP_BODY


def kernel_text(k0):
    return prompts.kernel_block(kernel_summaries(k0.source, k0, only="asm_copy")[0],
                                k0.function("asm_copy"))


def test_mutation_request_carries_everything(asm_copy_k0):
    fn = asm_copy_k0.function("asm_copy")
    prof = prompts.WindowProfile(counts=(64,) * 7, stalls=(0, 0, 0, 0, 12, 900, 0), label="modeled")
    notes = [prompts.Note("llm_mutate", "asm_copy[12:19] -> 4 lines", "mismatch",
                          "output dst[64]: expected 1, got 2"),
             prompts.Note("nop_remove", "asm_copy[9:10] -> 0 lines", "equal", speedup=1.013)]
    req = prompts.mutation_request(LLMConfig(), kernel_text=kernel_text(asm_copy_k0), function=fn,
                                   start=12, end=19, profile=prof, notes=notes)
    system = "\n".join(b["text"] for b in req["system"])
    user = req["messages"][0]["content"][0]["text"]
    # target and what the hardware rewards
    for s in ("gfx942", "CDNA3", "Latency hiding", "Fewer s_waitcnt stalls", "Fewer instructions",
              "Occupancy", "MFMA"):
        assert s in system
    # the ABI summary: args, registers used and free, LDS
    assert "kernel arguments: 24 bytes" in system and "v9..v15 are free" in system
    assert "LDS: 0 bytes" in system
    # the rules
    for s in ("no assembler directives", "Same ABI", "Keep hazards' wait states",
              "waits must cover every use"):
        assert s.lower() in system.lower()
    # the window with counts and stalls, aligned
    for k, line in enumerate(LOOP_BODY):
        assert line in user
    assert "stall(modeled)" in user and "900" in user
    # the notebook: verdicts and speedups
    assert "mismatch: output dst[64]" in user and "equal, 1.013x" in user
    assert req["tool_choice"] == {"type": "tool", "name": "propose_edit"}
    assert req["tools"][0]["input_schema"]["required"] == ["replacement", "rationale"]


def test_static_parts_are_cached_and_byte_identical(asm_copy_k0):
    fn = asm_copy_k0.function("asm_copy")
    kt = kernel_text(asm_copy_k0)
    a = prompts.mutation_request(LLMConfig(), kernel_text=kt, function=fn, start=12, end=19)
    b = prompts.repair_request(LLMConfig(), kernel_text=kernel_text(asm_copy_k0), function=fn,
                               start=0, end=7, rejected_lines=["s_nop 0"], status="fault",
                               reason="out of bounds at 0x1000")
    for req in (a, b):
        assert [blk["cache_control"] for blk in req["system"]] == [{"type": "ephemeral"}] * 2
        assert "cache_control" not in req["messages"][0]["content"][0]
    assert a["system"] == b["system"] and a["tools"] == b["tools"]
    off = prompts.mutation_request(LLMConfig(prompt_cache=False), kernel_text=kt, function=fn,
                                   start=12, end=19)
    assert all("cache_control" not in blk for blk in off["system"])


def test_crossover_and_repair_requests(asm_copy_k0):
    fn = asm_copy_k0.function("asm_copy")
    kt = kernel_text(asm_copy_k0)
    x = prompts.crossover_request(LLMConfig(), kernel_text=kt, function_a=fn, start=12, end=19,
                                  lines_b=["v_lshlrev_b32_e32 v2, 2, v1"], speedup_a=1.05,
                                  speedup_b=1.10)
    u = x["messages"][0]["content"][0]["text"]
    assert "1.050x" in u and "1.100x" in u and "Parent B's version" in u
    r = prompts.repair_request(LLMConfig(), kernel_text=kt, function=fn, start=12, end=19,
                               rejected_lines=["global_store_dword v[4:5], v8, off"],
                               status="mismatch", reason="output dst[64] differs",
                               details={"first_mismatch": {"index": 64}})
    u = r["messages"][0]["content"][0]["text"]
    assert "status: mismatch" in u and "first_mismatch" in u and "smallest change" in u


def test_listing_folds_padding():
    from asmevo.targets.amdgpu.program import Instruction

    class F:
        name = "f"
        items = [Instruction("s_endpgm")] + [Instruction("s_nop 0")] * 29
    text = prompts.listing(F, max_lines=100)
    assert text.splitlines() == ["    0  s_endpgm", "    1  s_nop 0   (x29)"]


def test_no_temperature_unless_configured(asm_copy_k0):
    fn = asm_copy_k0.function("asm_copy")
    kt = kernel_text(asm_copy_k0)
    assert "temperature" not in prompts.mutation_request(LLMConfig(), kernel_text=kt, function=fn,
                                                         start=12, end=19)
    assert prompts.mutation_request(LLMConfig(temperature=0.4), kernel_text=kt, function=fn,
                                    start=12, end=19)["temperature"] == 0.4


def test_refusal_texts_carry_no_advice_for_the_command_line():
    """What the verifier and the tools write for a person at the CLI (--verbose, which
    environment variable raises a limit) is not for the model: every prompt text built
    from a verdict or a refusal leaves it out, and keeps the rest."""
    from asmevo import knobs
    from asmevo.operator import TryResult
    from asmevo.process import describe_limit, first_diagnostic
    from asmevo.edits import Edit
    from asmevo.operators.llm.agent_tools import try_text
    diag = first_diagnostic("<stdin>:1:1: error: invalid operand for instruction\n"
                            "v_add_u32 v1, v2\n^\n")
    limit = knobs.MAX_BUFFER_BYTES.exceeded(1 << 31, "buffer dst")
    slow = f"llvm-mc timed out after {describe_limit(30, 4096)}; it was killed"
    for text in (diag, limit, slow):
        assert "--verbose" in text or "ASMEVO_" in text          # the producers' own words
        clean = prompts.for_model(text)
        assert "--verbose" not in clean and "ASMEVO_" not in clean, clean
        assert clean.split(" (")[0].split(";")[0] == text.split(" (")[0].split(";")[0]
    assert prompts.for_model(diag) == "<stdin>:1:1: error: invalid operand for instruction"
    note = prompts.Note("llm_mutate", "asm_copy[12:19]", "build", f"build failed: {diag}")
    assert "--verbose" not in note.render() and "invalid operand" in note.render()
    tried = try_text(1, 4, Edit("asm_copy", 12, 19, ("s_nop 0",)), ("s_nop 0",),
                     TryResult("timeout", slow, {"why": limit}))
    assert "ASMEVO_" not in tried and "timed out after 30 s" in tried
