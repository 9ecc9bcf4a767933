"""Operators for the NVIDIA sm_90 target: legal SASS moves, re-timing, PTX rebuilds.

Mutations of the operator contract (:mod:`asmevo.operator`): ``mutate(individual,
context)`` returns an Edit, or ``context.reject(why)``. Each reads
``context.program(individual)`` (a recovered nvidia Program, ``run.target =
"nvidia"``), ``context.kernel`` and ``context.rng``, and returns the window edit
(:func:`asmevo.targets.nvidia.edit.to_edit`) whose lines the target replays with
``patch``. Every proposal has already passed the legality rules.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.operator import mutation
from asmevo.targets.nvidia import edit as E
from asmevo.targets.nvidia.sass import max_stall


@mutation("sass_move", targets=("nvidia",))
class SassMove:
    """Move one memory instruction up (earlier: hide latency) or down, within its region."""


    def __init__(self, max_distance: int = 16, prefer_up: float = 0.75, tries: int = 24,
                 compensate: bool = True):
        self.max_distance, self.prefer_up = max_distance, prefer_up
        self.tries, self.compensate = tries, compensate

    def mutate(self, individual, context) -> Edit:   # or context.reject(...)
        prog = context.program(individual)
        code = prog.kernel(context.kernel)
        movable = [i for i, ins in enumerate(code.instructions) if ins.ops.movable]
        if not movable:
            return context.reject("no movable memory instruction")
        rng = context.rng
        for _ in range(self.tries):
            i = rng.choice(movable)
            targets = E.legal_moves(code, i, max_distance=self.max_distance,
                                    compensate=self.compensate)
            if not targets:
                continue
            up = [t for t in targets if t < i]
            pool = up if up and rng.random() < self.prefer_up else targets
            to = rng.choice(pool)
            new = prog.with_kernel(E.move(code, i, to, compensate=self.compensate))
            note = f"{code.instructions[i].text} {i}->{to}"
            return E.to_edit(prog, new, context.kernel, operator=self.name, note=note)
        return context.reject(f"no legal move found in {self.tries} tries")


@mutation("sass_retime", targets=("nvidia",))
class SassRetime:
    """Shorten (when the legality rules allow) or lengthen one instruction's stall."""


    def __init__(self, tries: int = 24, shorten: float = 0.8):
        self.tries, self.shorten = tries, shorten

    def mutate(self, individual, context) -> Edit:   # or context.reject(...)
        prog = context.program(individual)
        code = prog.kernel(context.kernel)
        rng = context.rng
        for _ in range(self.tries):
            i = rng.randrange(len(code.instructions))
            c = code.instructions[i].control
            if rng.random() < self.shorten and c.stall > 1:
                stall = rng.randint(1, c.stall - 1)
            elif c.stall < max_stall(c.yield_bit):
                stall = c.stall + 1
            else:
                continue
            try:
                new = prog.with_kernel(E.retime(code, i, stall=stall))
            except E.IllegalEdit:
                continue
            note = f"{code.instructions[i].text}: stall {c.stall}->{stall}"
            return E.to_edit(prog, new, context.kernel, operator=self.name, note=note)
        return context.reject(f"no legal re-timing found in {self.tries} tries")


@mutation("ptx_rebuild", targets=("nvidia",))
class PtxRebuild:
    """Recompile K0's PTX with other ptxas options (an -O level, a register cap):
    another schedule and register allocation of the same ABI. Only from K0 (the
    rebuild replaces the whole cubin), only where the PTX lies beside K0."""


    def mutate(self, individual, context) -> Edit:   # or context.reject(...)
        from asmevo.targets.nvidia.ptx import VARIANTS, ptx_edit, ptx_path
        if individual.edits:
            return context.reject("a PTX rebuild starts from K0; this individual carries edits")
        prog = context.program(individual)
        if ptx_path(prog.source) is None:
            return context.reject("no PTX beside K0 (<cubin stem>.ptx)")
        return ptx_edit(context.kernel, context.rng.choice(VARIANTS))

