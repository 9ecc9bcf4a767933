"""``dead_code``: delete every ALU instruction whose results nothing observes, across blocks.

``peephole``'s ``dce`` rule deletes one instruction of a hot block at a time and
proves a vector result dead only inside its block. This operator works on the
whole function with lane-aware liveness (:mod:`asmevo.targets.amdgpu.analysis.lanes`):
a VALU write is dead when its register is live in no lane after it -- neither in
the lanes of the current EXEC (a later read under the same mask) nor beyond them
(a read after an EXEC change, or a lane-crossing read). It deletes to a fixed
point: removing one dead instruction can make its inputs' producers dead.

Deleted: pure ALU instructions only (``structure.pure_alu``: no memory, no
counter, no EXEC write, no fixed point, no lane access), every register they
write (SCC, VCC and carries included) dead after them. Never loads or stores,
EXEC writers, waits, branches, raw or unknown instructions. The deletions of
each block are one window; the windows are hazard-padded and gated together.

Why faster: fewer instructions issued. Compiler output rarely has dead code;
other rewrites (scalarize's move-backs, a crossover, an LLM edit) leave some.
"""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness
from asmevo.targets.amdgpu.program import Program
from asmevo.operator import OperatorContext, mutation
from asmevo.operators.rules.structure import StructuralMutation, pure_alu, seal_edits

MAX_ROUNDS = 16


def dead_instructions(fn) -> list[int]:
    """Indices of pure ALU instructions of ``fn`` whose every write is dead (lane-aware)."""
    cfg = build_cfg(fn)
    lanes = LaneLiveness(fn, cfg)
    out = []
    for i, e in enumerate(cfg.effects):
        if not cfg.reachable[cfg.block_of[i]] or fn.instructions[i].raw:
            continue
        if pure_alu(e) and not e.writes & lanes.after(i):
            out.append(i)
    return out


def _without(program: Program, function: str, gone: set[int]) -> tuple[Program, list[int]]:
    """``program`` with original instruction indices ``gone`` deleted, and the original
    index of every instruction left."""
    fn = program.function(function)
    keep = [k for k in range(len(fn.instructions)) if k not in gone]
    cfg = build_cfg(fn)
    for b in reversed(cfg.blocks):
        if any(k in gone for k in range(b.start, b.end)):
            program = program.replace_window(
                function, b.start, b.end,
                [fn.instructions[k] for k in range(b.start, b.end) if k not in gone])
    return program, keep


def dead_to_fixed_point(program: Program, function: str) -> set[int]:
    """Original indices of every instruction deletion by deletion proves dead."""
    gone: set[int] = set()
    current, alive = program, list(range(len(program.function(function).instructions)))
    for _ in range(MAX_ROUNDS):
        dead = dead_instructions(current.function(function))
        if not dead:
            break
        gone |= {alive[i] for i in dead}
        current, alive = _without(program, function, gone)
    return gone


@mutation("dead_code", targets=("amdgpu",))
class DeadCode(StructuralMutation):
    """Delete all dead ALU code of the kernel at once, or (``one=True``) one random
    dead instruction (see the module doc)."""

    def __init__(self, one: bool = False):
        super().__init__()
        self.one = bool(one)

    def mutate(self, individual, context: OperatorContext):
        program = context.program(individual)
        fn = program.function(context.kernel)
        gone = dead_to_fixed_point(program, fn.name)
        if not gone:
            return context.reject("no ALU instruction is dead (lane-aware liveness)")
        if self.one:
            first = dead_instructions(fn)
            gone = {context.rng.choice(first)}
        cfg = build_cfg(fn)
        windows = []
        for b in cfg.blocks:
            hit = [k for k in range(b.start, b.end) if k in gone]
            if hit:
                windows.append((b.start, b.end, [cfg.texts[k] for k in range(b.start, b.end)
                                                 if k not in gone]))
        texts = "; ".join(cfg.texts[k] for k in sorted(gone))
        result = seal_edits(program, fn.name, windows, operator=self.name,
                            note=f"delete {len(gone)} dead: {texts}"[:300])
        return result if isinstance(result, tuple) else context.reject(result.reason)

