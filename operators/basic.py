"""The engine's baseline operators: small, real, deterministic edits.

They exist so the engine can be run and tested end to end before the rule
and LLM operators: ``nop_remove`` deletes one ``s_nop``; ``swap_adjacent``
swaps two neighbouring instructions that share no register. Neither claims
the edit is correct: the verifier judges every candidate.
"""
from __future__ import annotations

import re

from asmevo.edits import Edit
from operators.registry import OperatorContext, register

_REG = re.compile(r"\b([sv])(?:(\d+)|\[(\d+):(\d+)\])|\b(vcc|exec|m0|scc)\b")
# never moved: control flow, waits, barriers and anything with side effects on the wave
_PINNED = ("s_branch", "s_cbranch", "s_endpgm", "s_waitcnt", "s_barrier", "s_nop", "s_sleep",
           "s_setprio", "s_setpc", "s_swappc", "s_getpc", "s_trap", "s_dcache", "s_icache",
           "s_sendmsg", "s_setreg", "s_getreg", "s_and_saveexec", "s_or_saveexec",
           "s_andn2_saveexec", "s_mov_b64 exec", "buffer_wbl2", "buffer_inv")
_MEMORY = ("global_", "buffer_", "flat_", "scratch_", "ds_", "s_load", "s_store", "s_buffer")
_IMPLICIT_VCC = ("v_cmp", "v_cmpx", "v_addc", "v_subb", "v_cndmask", "v_div_scale", "v_add_co",
                 "v_sub_co", "v_subrev_co", "v_div_fmas")


def registers(text: str) -> set[str]:
    """Register names an instruction line mentions (ranges expanded), plus implicit ones."""
    mnemonic, _, operands = text.partition(" ")
    regs: set[str] = set()
    for m in _REG.finditer(operands):
        if m.group(5):
            regs.add(m.group(5))
        elif m.group(2) is not None:
            regs.add(f"{m.group(1)}{m.group(2)}")
        else:
            lo, hi = int(m.group(3)), int(m.group(4))
            regs.update(f"{m.group(1)}{r}" for r in range(lo, hi + 1))
    if mnemonic.startswith("s_"):
        regs.add("scc")        # most SALU ops write SCC: never reorder two of them
    if mnemonic.startswith(_IMPLICIT_VCC) and "_e32" in mnemonic or mnemonic.startswith("v_cmp"):
        regs.add("vcc")
    if "cmpx" in mnemonic:
        regs.add("exec")
    return regs


def _movable(ins) -> bool:
    return not ins.raw and not ins.text.startswith(_PINNED)


def independent(a, b) -> bool:
    """Two instructions that look safe to swap: no shared register, not two memory ops."""
    if not (_movable(a) and _movable(b)):
        return False
    if a.text.startswith(_MEMORY) and b.text.startswith(_MEMORY):
        return False
    return not (registers(a.text) & registers(b.text))


@register("nop_remove")
class NopRemove:
    """Delete one ``s_nop`` chosen at random (hazard padding or alignment filler)."""

    name = "nop_remove"
    kind = "mutation"

    def mutate(self, individual, context: OperatorContext) -> Edit | None:
        fn = context.program(individual).function(context.kernel)
        nops = [i for i, ins in enumerate(fn.instructions) if ins.mnemonic == "s_nop"]
        if not nops:
            return context.reject("no s_nop left in the kernel")
        i = context.rng.choice(nops)
        return Edit(context.kernel, i, i + 1, (), operator=self.name,
                    note=f"delete {fn.instructions[i].text}")

    def crossover(self, a, b, context):  # pragma: no cover - a mutation operator
        raise NotImplementedError


@register("swap_adjacent")
class SwapAdjacent:
    """Swap two neighbouring, independent-looking instructions inside one hot window."""

    name = "swap_adjacent"
    kind = "mutation"

    def __init__(self, tries: int = 16, top_windows: int = 0):
        if tries < 1 or top_windows < 0:
            raise ValueError("tries must be >= 1 and top_windows >= 0")
        self.tries = tries
        self.top_windows = top_windows   # 0: every window

    def mutate(self, individual, context: OperatorContext) -> Edit | None:
        program = context.program(individual)
        instrs = program.function(context.kernel).instructions
        windows = [w for w in context.windows(individual) if w[2] - w[1] >= 2]
        if self.top_windows:
            windows = windows[:self.top_windows]
        if not windows:
            return context.reject("no window holds two instructions")
        for _ in range(self.tries):
            _, start, end = context.rng.choice(windows)
            i = context.rng.randrange(start, end - 1)
            a, b = instrs[i], instrs[i + 1]
            if independent(a, b):
                return Edit(context.kernel, i, i + 2, (b.text, a.text), operator=self.name,
                            note=f"swap {a.mnemonic} / {b.mnemonic}")
        return context.reject(f"no independent neighbours found in {self.tries} tries")

    def crossover(self, a, b, context):  # pragma: no cover - a mutation operator
        raise NotImplementedError
