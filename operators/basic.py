"""The engine's baseline operators: small, real, deterministic edits.

They exist so the engine can be run and tested end to end before the rule
and LLM operators: ``nop_remove`` deletes one ``s_nop``; ``swap_adjacent``
swaps two neighbouring instructions with no register dependency between them
(the shared effects model of ``asmevo.targets.amdgpu.analysis``). Neither claims
the edit is correct -- hazards and wait counts are not re-derived -- the verifier
judges every candidate.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.operator import OperatorContext, Rejected, mutation

# never moved: control flow, waits, barriers, messages and what the register model
# does not know (the shared instruction-effects model classifies them)
_PINNED_CLASSES = frozenset({"BRANCH", "WAITCNT", "NOP", "BARRIER", "MSG", "END", "OTHER"})
_POSITIONAL = ("s_getpc",)      # reads its own address: moving it changes the result


def _movable(ins) -> bool:
    if ins.raw or ins.text.startswith(_POSITIONAL):
        return False
    e = effects(ins.text)
    return not (e.unknown or e.fence or e.klass in _PINNED_CLASSES)


def independent(a, b) -> bool:
    """Two instructions that look safe to swap: neither pinned, not two memory
    accesses, and no register one writes that the other reads or writes (implicit
    operands -- SCC, VCC, EXEC, M0 -- included, from the shared effects model)."""
    if not (_movable(a) and _movable(b)):
        return False
    ea, eb = effects(a.text), effects(b.text)
    if ea.mem and eb.mem:
        return False
    return not (ea.writes & (eb.reads | eb.writes) or eb.writes & ea.reads)


@mutation("nop_remove", targets=("amdgpu",))
class NopRemove:
    """Delete one ``s_nop`` chosen at random (hazard padding or alignment filler)."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        fn = context.program(individual).function(context.kernel)
        nops = [i for i, ins in enumerate(fn.instructions) if ins.mnemonic == "s_nop"]
        if not nops:
            return context.reject("no s_nop left in the kernel")
        i = context.rng.choice(nops)
        return Edit(context.kernel, i, i + 1, (), operator=self.name,
                    note=f"delete {fn.instructions[i].text}")


@mutation("swap_adjacent", targets=("amdgpu",))
class SwapAdjacent:
    """Swap two neighbouring, independent-looking instructions inside one hot window."""

    def __init__(self, tries: int = 16, top_windows: int = 0):
        if tries < 1 or top_windows < 0:
            raise ValueError("tries must be >= 1 and top_windows >= 0")
        self.tries = tries
        self.top_windows = top_windows   # 0: every window

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
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
