"""The solver's memory bound (``ASMEVO_PROVE_MEMORY_BYTES``): a question that needs more
than it answers ``unknown``, saying so, and the process goes on proving."""
from __future__ import annotations

from asmevo.prove.equiv import Window, prove_window
from asmevo.prove.machine import Context
from asmevo.prove.z3env import check, unknown_reason, z3
from asmevo.targets.amdgpu.analysis import regs as R

ONE_MB = str(1 << 20)


def _products() -> object:
    """A question z3 bit-blasts: eight 64-bit products (some MB of clauses)."""
    xs = [z3.BitVec(f"x{i}", 64) for i in range(9)]
    s = z3.Solver()
    s.set("timeout", 60_000)
    s.add(z3.Sum([xs[i] * xs[i + 1] for i in range(8)]) == 0x0123456789ABCDEF,
          *[z3.UGT(x, 3) for x in xs])
    return s


def test_a_question_past_the_bound_is_unknown_and_the_next_one_is_answered(monkeypatch):
    monkeypatch.setenv("ASMEVO_PROVE_MEMORY_BYTES", ONE_MB)
    s = _products()
    assert check(s) == z3.unknown
    why = unknown_reason(s)
    assert why.startswith("memory limit (1 MB") and "ASMEVO_PROVE_MEMORY_BYTES" in why
    assert z3.get_param("memory_high_watermark_mb") == "0"     # none between questions
    a = z3.BitVec("a", 8)
    small = z3.Solver()
    small.add(a * 3 == 9)
    assert check(small) == z3.sat                  # the bound is per question, not spent
    monkeypatch.delenv("ASMEVO_PROVE_MEMORY_BYTES")
    x, y = z3.BitVecs("x y", 64)                    # factoring: out of time, in little memory
    s = z3.Solver()
    s.set("timeout", 500)
    s.add(x * y == 0xC2B2AE3D27D4EB4F, z3.UGT(x, 1), z3.UGT(y, 1),
          z3.ULT(x, 1 << 33), z3.ULT(y, 1 << 33))
    assert check(s) == z3.unknown and unknown_reason(s) == "timeout"


def test_a_window_whose_question_is_past_the_bound_is_unknown_with_the_reason(monkeypatch):
    # tests/verify/wrong's same_address_lanes window (refuted under the default bound:
    # test_equiv), whose question bit-blasts 64 lanes' DPP table
    live = R.operand_mask("exec")
    w = Window([], ["v_mov_b32_e32 v10, v6", "v_mov_b32_e32 v11, v7",
                    "v_mov_b32_dpp v10, v6 quad_perm:[1,1,3,3] row_mask:0xf bank_mask:0xf",
                    "v_mov_b32_dpp v11, v7 quad_perm:[1,1,3,3] row_mask:0xf bank_mask:0xf",
                    "global_store_dwordx2 v[10:11], v[8:9], off"], live, 0)
    monkeypatch.setenv("ASMEVO_PROVE_MEMORY_BYTES", ONE_MB)
    got = prove_window(Context(0x2F0), w, timeout_ms=60_000)
    assert got.status == "unknown"
    assert got.reason.startswith("solver: memory limit (1 MB"), got.reason


def test_a_z3_without_the_mb_watermark_gets_the_byte_one(monkeypatch, capfd):
    """z3 before ``memory_high_watermark_mb`` (Debian 12's 4.8.12) knows only the byte
    watermark: the bound is set through it, capped at 32 bits, and cleared after."""
    from asmevo.prove import z3env
    assert z3env._watermark_param() == ("memory_high_watermark_mb", 1)   # this z3 has it
    seen = []
    real = z3.set_param
    monkeypatch.setattr(z3env, "_watermark_param", lambda: ("memory_high_watermark", 1 << 20))
    monkeypatch.setattr(z3, "set_param", lambda k, v: (seen.append((k, v)), real(k, v)))
    monkeypatch.setenv("ASMEVO_PROVE_MEMORY_BYTES", str(64 << 30))   # past 32 bits in bytes
    a = z3.BitVec("a", 8)
    s = z3.Solver()
    s.add(a * 3 == 9)
    assert check(s) == z3.sat
    assert [k for k, _ in seen] == ["memory_high_watermark", "memory_high_watermark"]
    assert seen[0][1] == (1 << 32) - 1 and seen[1][1] == 0
    assert "unknown parameter" not in capfd.readouterr().err
