"""Hand-written loops for the loop-operator tests: assembled into a one-kernel code
object (real llvm-mc + ld.lld, tests/emu/asmdsl.py), recovered, rewritten, and run on
the emulator with chosen registers and buffers."""
from __future__ import annotations

import random
import re
from pathlib import Path

from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.targets.amdgpu.program import Label
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
from asmevo.launch.spec import load_spec
from asmevo.operator import OperatorContext
from tests.emu.asmdsl import build_kernel, run_asm

# sum of one column of x per lane: rows of 16 floats (lane i reads column i % 16),
# s5 rows (s5 >= 1); x at s[2:3]
SUM_LOOP = """
  v_mov_b32_e32 v4, 0
  v_and_b32_e32 v2, 15, v0
  v_lshlrev_b32_e32 v2, 2, v2
  v_mov_b32_e32 v3, 0
  v_lshl_add_u64 v[2:3], s[2:3], 0, v[2:3]
.Lloop:
  global_load_dword v5, v[2:3], off
  s_add_i32 s5, s5, -1
  v_lshl_add_u64 v[2:3], v[2:3], 0, 64
  s_cmp_eq_u32 s5, 0
  s_waitcnt vmcnt(0)
  v_add_f32_e32 v4, v4, v5
  s_cbranch_scc0 .Lloop
"""

# one lane's row of 4-byte values read with unit stride (the naive row kernel)
# (lane i % 16 reads row i % 16 of s5 floats)
ROW_LOOP = SUM_LOOP.replace("0, 64", "0, 4").replace("v_lshlrev_b32_e32 v2, 2, v2",
                                                     "v_mul_u32_u24_e32 v2, s5, v2\n"
                                                     "  v_lshlrev_b32_e32 v2, 2, v2")


# for (i = lane; i < s5; i += 64) acc += x[i]: lanes leave one by one (EXEC)
LANE_LOOP = """
  v_mov_b32_e32 v4, 0
  v_mov_b32_e32 v1, v0
  v_lshlrev_b32_e32 v2, 2, v0
  v_mov_b32_e32 v3, 0
  v_lshl_add_u64 v[2:3], s[2:3], 0, v[2:3]
  s_mov_b64 s[6:7], 0x100
  s_mov_b64 s[8:9], 0
  v_cmp_gt_i32_e32 vcc, s5, v1
  s_and_saveexec_b64 s[10:11], vcc
  s_cbranch_execz .Ldone
.Lloop:
  global_load_dword v5, v[2:3], off
  v_add_u32_e32 v1, 64, v1
  v_cmp_le_i32_e32 vcc, s5, v1
  v_lshl_add_u64 v[2:3], v[2:3], 0, s[6:7]
  s_or_b64 s[8:9], vcc, s[8:9]
  s_waitcnt vmcnt(0)
  v_add_f32_e32 v4, v4, v5
  s_andn2_b64 exec, exec, s[8:9]
  s_cbranch_execnz .Lloop
  s_or_b64 exec, exec, s[8:9]
.Ldone:
  s_or_b64 exec, exec, s[10:11]
"""


NAIVE = Path(__file__).resolve().parents[3] / "experiments" / "kernels_naive"


def remainder(label: str, step: int = 64) -> list[str]:
    """SUM_LOOP's (ROW_LOOP's: ``step`` 4) own loop under ``label``: the remainder path
    the loop operators leave behind, as :func:`symbolic` prints it."""
    return [f"{label}:", "global_load_dword v5, v[2:3], off", "s_add_i32 s5, s5, -1",
            f"v_lshl_add_u64 v[2:3], v[2:3], 0, {step}", "s_cmp_eq_u32 s5, 0",
            "s_waitcnt vmcnt(0)", "v_add_f32_e32 v4, v4, v5", f"s_cbranch_scc0 {label}"]


def program(body: str):
    """(recovered Program, its kernel Function) of ``body`` as kernel ``k``."""
    prog = recover(load(build_kernel(body)))
    return prog, prog.function("k")


def text_of(fn) -> list[str]:
    """The function as assembly lines (labels included), without the final s_endpgm
    and its padding (run_asm appends its own)."""
    lines = [f"{i.name}:" if isinstance(i, Label) else i.text for i in fn.items]
    while lines and (lines[-1].startswith("s_nop") or lines[-1] == "s_endpgm"):
        lines.pop()
    return lines


def symbolic(lines: list[str]) -> list[str]:
    """``lines`` with generated and recovered label names replaced by L0, L1, ... in
    order of first appearance (the names themselves are content hashes)."""
    names: dict[str, str] = {}

    def sub(m):
        return names.setdefault(m.group(0), f"L{len(names)}")
    return [re.sub(r"\.L(?:ae|BB)_[0-9a-f]+", sub, t) for t in lines]


def run(lines, **kw):
    return run_asm("\n".join(lines), **kw)


class Individual:
    def __init__(self, edits=()):
        self.edits = tuple(edits)


def context(prog, seed: int = 0, kernel: str = "k") -> OperatorContext:
    return OperatorContext(k0=prog, kernel=kernel, rng=random.Random(seed),
                           program_of=lambda ind: apply_edits(prog, ind.edits))


def spec_program(kernel_dir, isa=None):
    """(spec, recovered K0) of a corpus or naive kernel folder."""
    spec = load_spec(kernel_dir, "small")
    return spec, recover(load(spec.code_object_for(isa)))


def verdict(kernel_dir, edits, isa=None):
    """The verifier's verdict on K0 + ``edits`` as a search candidate (static gate, build,
    differential runs with guards and poison; two seeded input sets, in process)."""
    ctx = EvalContext(spec_path=str(kernel_dir), size="small", timing="none", seeds=(0, 1),
                      runs=1, isolate=False, isa=isa)
    return evaluate_candidate(ctx, tuple(edits)).verdict
